#!/usr/bin/env bash
# The tracer on its ctypes binding where the job is more than one plain script, on the GPU machine,
# ONE device command of about 3 minutes (carry .whl and .debs):
#
#   source .debs/gpu-env.sh; bash benchmarks/gpu/tracer_binding_jobs.sh
#
# 1. the Python API in this process (benchmarks/gpu/python_api_check.py): profile block and steps, the cell magic, the
#    Keras callback; the capture's meta 'binding';
# 2. a job whose Python spawns a second Python (multiprocessing, spawn) that runs its own GEMMs, under
#    `run --backend cupti`: one capture per process, each on the binding, and the report's per-process table.
# $OUT: session.log (committed as benchmarks/results/h200_binding_jobs.log).
set -u
rm -rf /tmp/nvw-session
source benchmarks/gpu/common.sh
step api
timeout 200 python3 benchmarks/gpu/python_api_check.py $R/api >> $LOG 2>&1; echo "rc=$?" >> $LOG
step spawn
cat > $S/spawn_job.py <<'PY'
import multiprocessing as mp
import torch

def child():
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a = a @ a / 1024
    torch.cuda.synchronize()

if __name__ == "__main__":
    x = torch.randn(2048, 2048, device="cuda")
    for _ in range(10):
        x = x @ x / 2048
    torch.cuda.synchronize()
    p = mp.get_context("spawn").Process(target=child)
    p.start(); p.join()
    print("child exit", p.exitcode)
PY
t spawn $W run --backend cupti -o $R/spawn -- python3 $S/spawn_job.py
tail -5 $R/spawn.txt >> $LOG
for f in $R/spawn/cupti-*.sqlite; do
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); m=dict(c.execute('SELECT key, value FROM meta')); print(sys.argv[1].rsplit('/',1)[-1], m.get('binding'), m.get('status'), 'kernels', c.execute('SELECT COUNT(*) FROM kernel').fetchone()[0])" "$f"
done >> $LOG 2>&1
$W report $R/spawn --format json > $R/spawn.json 2>> $LOG
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('verdict', d.get('verdict'), 'processes', [(p.get('pid'), p.get('launches'), p.get('tensor_core_share'), p.get('tensor_core_precisions')) for p in d.get('processes') or []])" $R/spawn.json >> $LOG 2>&1
step end
cp $LOG ${OUT:-/tmp} 2>/dev/null
