#!/usr/bin/env bash
# Issue 17: the CUPTI tracer on the GPU machine, in ONE device command of about 8 minutes (carry .whl and .debs):
#
#   source .debs/gpu-env.sh; bash benchmarks/gpu/backend_overhead.sh
#
# 1. facts: GPU, torch, cupti-python, the loaded libcupti's version and record sizes (the raw path's check);
# 2. correctness: one short launch-heavy job (workloads/launch_rate.py, torch modules NVTX-annotated) under nsys,
#    under cupti (raw buffers), cupti with the writer process forced, and cupti on cupti-python's objects (the old
#    path): launches per mangled kernel name must MATCH nsys; meta of each capture (records path, writer, drops);
# 3. overhead: unprofiled / cupti / cupti_objects / nsys, 3 rounds, order rotated each round, on a launch-heavy
#    job (small-MLP training steps) and a compute-heavy one (4096^3 bf16 GEMM chains); per launch from the
#    launches counted in the first repeat's captures (benchmarks/gpu/tracer_summary.py summary);
#    then the start-up cost of the tracer in one Python process (plain, and with torch + a CUDA context);
# 4. $OUT: session.log, summary.md, the jobs' outputs and capture metadata (runs.tgz; captures are left out).
# BUDGET_S (default 480) stops starting jobs after that many seconds, so the summary is always written.
set -u
START=$(date +%s); BUDGET_S=${BUDGET_S:-480}
source benchmarks/gpu/common.sh
LR="python3 workloads/launch_rate.py"
left() { [ $(( $(date +%s) - START )) -lt "$BUDGET_S" ]; }
tt() { if left; then t "$1" timeout 150 "${@:2}"; else echo "skipped $1 (budget)" >> $LOG; fi; }  # tt NAME CMD...

step facts
{ nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__)"
  python3 - <<'PY'
from importlib.metadata import version
from cupti import cupti
from nvprof_wrap.tracer import _util, raw
cupti.subscribe(lambda *a: None, None)
path = _util._loaded_libcupti()
lib = raw.open_library(cupti, path)
sizes = raw.record_sizes(lib, sorted(raw.L.LAYOUTS))
print("cupti-python", version("cupti-python"), "libcupti", path, "CUPTI API", raw.api_version(lib))
print("record sizes", {k: (v, raw.L.struct_version(k, v)) for k, v in sizes.items()})
PY
} >> $LOG 2>&1

step "start-up: a Python process, unprofiled and with the tracer started (sitecustomize, cupti-python, CUPTI)"
startup() {  # startup WHAT CMD...: 3 rounds, interleaved
  for i in 1 2 3; do
    tt start_none_${1}_$i "${@:2}"
    tt start_cupti_${1}_$i env PYTHONPATH=$PWD/nvprof_wrap/tracer/inject:$PYTHONPATH NVPROF_WRAP_CUPTI_DIR=$S/startup "${@:2}"
  done
}
startup plain python3 -c pass

step correctness
CHK="--kind launch --steps 300"
tt chk_nsys $W run --backend nsys --annotate torch --no-report -o $R/chk_nsys -- $LR $CHK
tt chk_cupti $W run --backend cupti --annotate torch --no-report -o $R/chk_cupti -- $LR $CHK
tt chk_cupti_process env NVPROF_WRAP_CUPTI_WRITER=process $W run --backend cupti --annotate torch --no-report -o $R/chk_cupti_process -- $LR $CHK
tt chk_cupti_objects env NVPROF_WRAP_CUPTI_RAW=0 $W run --backend cupti --annotate torch --no-report -o $R/chk_cupti_objects -- $LR $CHK
python3 benchmarks/gpu/tracer_summary.py check $R/chk_nsys $R/chk_cupti $R/chk_cupti_process $R/chk_cupti_objects >> $LOG 2>&1
for r in chk_nsys chk_cupti; do
  $W report $R/$r --format json > $R/${r}_report.json 2>> $LOG
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); o={x['op']: x['launches'] for x in d.get('ops') or []}; print(sys.argv[1].rsplit('/',1)[-1], len(o), 'ops; launches by op (top 8):', sorted(o.items(), key=lambda x: -x[1])[:8])" $R/${r}_report.json >> $LOG 2>&1
done

step overhead
VARIANTS=(none cupti cupti_objects nsys); NV=${#VARIANTS[@]}
job() {  # job VARIANT NAME CMD...
  local v=$1 name=$2; shift 2
  case $v in
    none) tt $name "$@" ;;
    cupti) tt $name $W run --backend cupti --no-report -o $R/$name -- "$@" ;;
    cupti_objects) tt $name env NVPROF_WRAP_CUPTI_RAW=0 $W run --backend cupti --no-report -o $R/$name -- "$@" ;;
    nsys) tt $name $W run --backend nsys --no-report -o $R/$name -- "$@" ;;
  esac
  case $name in *_1) ;; *) rm -rf $R/$name ;; esac  # rounds 2-3: the timings are enough
}
for rep in 1 2 3; do
  for (( i = 0; i < NV; i++ )); do
    v=${VARIANTS[$(( (i + rep) % NV ))]}
    job $v ovh_${v}_launch_$rep $LR --kind launch
    job $v ovh_${v}_compute_$rep $LR --kind compute
  done
done

step "start-up with torch and a CUDA context"
startup torch python3 -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"

step summary
python3 benchmarks/gpu/tracer_summary.py summary $S > $S/summary.md 2>> $LOG
cat $S/summary.md >> $LOG
for f in $(find $R -name 'cupti-*.sqlite*' ! -name '*-journal'); do
  python3 -c "import sqlite3,sys; c=sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); print(sys.argv[1], dict(c.execute('SELECT key, value FROM meta')))" $f
done > $S/capture_meta.txt 2>&1
step end
cp $LOG $S/summary.md $S/capture_meta.txt ${OUT:-/tmp} 2>/dev/null
( cd $S && tar czf ${OUT:-/tmp}/runs.tgz --exclude='*.sqlite*' --exclude='*.nsys-rep' --exclude='*.qdstrm' runs )
ls -la ${OUT:-/tmp}
