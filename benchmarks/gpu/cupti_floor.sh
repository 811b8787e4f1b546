#!/usr/bin/env bash
# Issue 17.1: how much of the tracer's cost per launch is CUPTI's own? One device command of about 3 minutes
# (carry .whl and .debs):
#
#   source .debs/gpu-env.sh; bash benchmarks/gpu/cupti_floor.sh
#
# The launch-heavy job (workloads/launch_rate.py --kind launch: small-MLP training steps, ~40k launches/s) run
# directly under the tracer's injector (no `nvprof-wrap run` around it), 3 rounds, order rotated each round:
#   none           unprofiled
#   cupti          the tracer as shipped (raw buffers, writer process)
#   discard        the same CUPTI kinds enabled, every buffer handed back unread (NVPROF_WRAP_CUPTI_DISCARD=1):
#                  CUPTI's own cost — the floor for any tracer built on CUPTI's activity API
#   noapi_discard  as discard, without the launch-API records (NVPROF_WRAP_CUPTI_RUNTIME=0): kernels, copies and
#                  sets only
# then the start-up: `python3 -c pass` unprofiled and traced (3 rounds), and one `-X importtime` of the traced one.
# $OUT: session.log, summary.md, importtime.txt.
set -u
source benchmarks/gpu/common.sh
INJ="env PYTHONPATH=$PWD/nvprof_wrap/tracer/inject:$PYTHONPATH"
LR="python3 workloads/launch_rate.py --kind launch --steps ${STEPS:-800}"
variant() {  # variant NAME ROUND
  local cap=$S/cap_$1_$2
  case $1 in
    none) t fl_none_$2 $LR ;;
    cupti) t fl_cupti_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$cap $LR ;;
    discard) t fl_discard_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$cap NVPROF_WRAP_CUPTI_DISCARD=1 $LR ;;
    noapi_discard) t fl_noapi_discard_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$cap NVPROF_WRAP_CUPTI_DISCARD=1 \
                     NVPROF_WRAP_CUPTI_RUNTIME=0 $LR ;;
  esac
}
step facts
{ nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nproc; uptime; } >> $LOG 2>&1
step overhead
V=(none cupti discard noapi_discard)
for rep in 1 2 3; do
  for (( i = 0; i < ${#V[@]}; i++ )); do variant ${V[$(( (i + rep) % ${#V[@]} ))]} $rep; done
done
step start-up
for rep in 1 2 3; do
  t st_none_$rep python3 -c pass
  t st_cupti_$rep $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_st_$rep python3 -c pass
done
$INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_it python3 -X importtime -c pass 2> $S/importtime.txt
step summary
python3 benchmarks/gpu/cupti_floor_summary.py $S > $S/summary.md 2>> $LOG
cat $S/summary.md >> $LOG
step end
cp $LOG $S/summary.md $S/importtime.txt ${OUT:-/tmp} 2>/dev/null
