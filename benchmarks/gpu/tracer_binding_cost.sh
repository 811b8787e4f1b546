#!/usr/bin/env bash
# Issue 17.1: the tracer on its ctypes binding (nvprof_wrap/tracer/ccupti.py) against cupti-python, on the GPU
# machine, in ONE device command of about 5 minutes (carry .whl and .debs):
#
#   source .debs/gpu-env.sh; bash benchmarks/gpu/tracer_binding_cost.sh
#
# 1. correctness: one short NVTX-annotated launch-heavy job under nsys (the reference), under `run --backend cupti`
#    on the ctypes binding (the default), on cupti-python (NVPROF_WRAP_CUPTI_BINDING=python) and on record objects
#    (NVPROF_WRAP_CUPTI_RAW=0: the binding hands over to cupti-python): launches per mangled kernel name must MATCH
#    nsys (benchmarks/gpu/tracer_summary.py check); each capture's meta (binding, records, api_records); the per-op table;
# 2. start-up: `python3 -c pass` unprofiled / traced on the binding / traced on cupti-python, 5 rounds interleaved,
#    and `-X importtime` of the traced one;
# 3. overhead: the launch-heavy job (workloads/launch_rate.py --kind launch) under the injector: none / cupti (the
#    binding) / cupti_python, 3 rounds, order rotated, on cores 2-3 (benchmarks/gpu/cupti_floor_summary.py summary).
# $OUT: session.log, summary.md, importtime.txt.
set -u
rm -rf /tmp/nvw-session  # a warm machine keeps the last run's captures
source benchmarks/gpu/common.sh
LR="python3 workloads/launch_rate.py"
INJ="env PYTHONPATH=$PWD/nvprof_wrap/tracer/inject:$PYTHONPATH"
step facts
{ nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nproc
  python3 -c "from nvprof_wrap.tracer import ccupti; b = ccupti.load(); print('ctypes binding:', b.path, 'CUPTI API', b.get_version())"
} >> $LOG 2>&1

step correctness
CHK="--kind launch --steps 300"
t chk_nsys $W run --backend nsys --annotate torch --no-report -o $R/chk_nsys -- $LR $CHK
t chk_ctypes $W run --backend cupti --annotate torch --no-report -o $R/chk_ctypes -- $LR $CHK
t chk_python env NVPROF_WRAP_CUPTI_BINDING=python $W run --backend cupti --annotate torch --no-report -o $R/chk_python -- $LR $CHK
t chk_objects env NVPROF_WRAP_CUPTI_RAW=0 $W run --backend cupti --annotate torch --no-report -o $R/chk_objects -- $LR $CHK
python3 benchmarks/gpu/tracer_summary.py check $R/chk_nsys $R/chk_ctypes $R/chk_python $R/chk_objects >> $LOG 2>&1
for r in chk_ctypes chk_python chk_objects; do
  for f in $R/$r/cupti*/cupti-*.sqlite $R/$r/cupti-*.sqlite; do
    [ -f "$f" ] && python3 -c "import sqlite3,sys; m=dict(sqlite3.connect(sys.argv[1]).execute('SELECT key, value FROM meta')); print(sys.argv[2], {k: m.get(k) for k in ('binding', 'cupti_version', 'records', 'api_records', 'status', 'cupti_flush')})" "$f" $r
  done
done >> $LOG 2>&1
for r in chk_nsys chk_ctypes; do
  $W report $R/$r --format json > $R/${r}_report.json 2>> $LOG
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); o={x['op']: x['launches'] for x in d.get('ops') or []}; print(sys.argv[1].rsplit('/',1)[-1], 'verdict', d.get('verdict'), len(o), 'ops; launches by op (top 6):', sorted(o.items(), key=lambda x: -x[1])[:6])" $R/${r}_report.json >> $LOG 2>&1
done

step start-up
for rep in 1 2 3 4 5; do
  t st_none_$rep python3 -c pass
  t st_ctypes_$rep $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_st_$rep python3 -c pass
  t st_python_$rep $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_stp_$rep NVPROF_WRAP_CUPTI_BINDING=python python3 -c pass
done
$INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_it python3 -X importtime -c pass 2> $S/importtime.txt

step overhead
PIN="taskset -c ${CORES:-2,3}"
variant() {  # variant NAME ROUND
  case $1 in
    none) t fl_none_$2 $PIN $LR --kind launch --steps 800 ;;
    cupti) t fl_cupti_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_cupti_$2 $PIN $LR --kind launch --steps 800 ;;
    cupti_python) t fl_cupti_python_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_cupti_python_$2 NVPROF_WRAP_CUPTI_BINDING=python \
                    $PIN $LR --kind launch --steps 800 ;;
  esac
}
V=(none cupti cupti_python)
for rep in 1 2 3; do
  for (( i = 0; i < ${#V[@]}; i++ )); do variant ${V[$(( (i + rep) % ${#V[@]} ))]} $rep; done
done
step summary
python3 benchmarks/gpu/cupti_floor_summary.py $S --variants none,cupti,cupti_python > $S/summary.md 2>> $LOG
python3 - $S >> $S/summary.md <<'PY'
import re, statistics, sys
log = open(sys.argv[1] + "/session.log").read()
w = {}
for m in re.finditer(r"^wall st_(\w+?)_\d+ ([\d.]+) rc (\d+)", log, re.M):
    w.setdefault(m.group(1), []).append(float(m.group(2)))
base = statistics.median(w.get("none", [0]))
print("\nstart-up, `python3 -c pass`, 5 rounds: " + "; ".join(
    f"{k} median {statistics.median(v):.3f} s (+{statistics.median(v) - base:.3f}; {', '.join(f'{x:.3f}' for x in v)})"
    for k, v in w.items()))
PY
cat $S/summary.md >> $LOG
step end
cp $LOG $S/summary.md $S/importtime.txt ${OUT:-/tmp} 2>/dev/null
