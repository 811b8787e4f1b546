#!/usr/bin/env bash
# Issue 17.1: can CUPTI's own cost per launch be lowered by its activity attributes? One device command of about
# 6 minutes; VARIANTS picks others (carry .whl and .debs):
#
#   source .debs/gpu-env.sh; bash benchmarks/gpu/cupti_attributes_tune.sh
#
# The launch-heavy job (workloads/launch_rate.py --kind launch) under the tracer's injector with every buffer
# handed back unread (NVPROF_WRAP_CUPTI_DISCARD=1: CUPTI's own cost, as in cupti_floor.sh), $ROUNDS rounds (4),
# order rotated, every run on the same two cores (taskset -c 2,3; unpinned, one variant's rounds differed by 1.6x):
#   none       unprofiled
#   all        the tracer's kinds and launch-API records (CUPTI's default attributes)
#   all_noapi  the same without launch-API records
#   k          the concurrent-kernel kind alone;   k_api  with the launch-API records
#   k_copy     with MEMCPY and MEMSET;             k_marker  with MARKER;   k_device  with DEVICE
#   devbuf     all, DEVICE_BUFFER_SIZE 64 MiB (3,200,000 B by default)
#   perthread  all, PER_THREAD_BUFFER on (CUPTI 13 has it on already)
#   hw         all, cuptiActivityEnableHWTrace(1) (hardware-event tracing: NOT_SUPPORTED on the H200)
#   sema       all, PROFILING_SEMAPHORE_POOL_SIZE and _PRE_ALLOCATE_VALUE 262144 (not measured yet: the one
#              attempt, before the size was passed by pointer, proves nothing)
# The default runs the first eight; VARIANTS="none all devbuf perthread hw sema" the others.
# Each setting's CUPTI answer and the attribute's previous value are in the capture's meta 'tune' (tune.txt).
# $OUT: session.log, summary.md, tune.txt.
set -u
rm -rf /tmp/nvw-session  # a warm machine keeps the last run's captures
source benchmarks/gpu/common.sh
INJ="env PYTHONPATH=$PWD/nvprof_wrap/tracer/inject:$PYTHONPATH NVPROF_WRAP_CUPTI_DISCARD=1"
LR="taskset -c ${CORES:-2,3} python3 workloads/launch_rate.py --kind launch --steps ${STEPS:-800}"
K=kinds=CONCURRENT_KERNEL
declare -A TUNE=([all]="" [all_noapi]="" [k]=$K [k_api]=$K [k_copy]=$K+MEMCPY+MEMSET [k_marker]=$K+MARKER
  [k_device]=$K+DEVICE [devbuf]="DEVICE_BUFFER_SIZE=67108864" [perthread]="PER_THREAD_BUFFER=1" [hw]="hw_trace=1"
  [sema]="PROFILING_SEMAPHORE_POOL_SIZE=262144,PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE=262144")
variant() {  # variant NAME ROUND
  if [ $1 = none ]; then t fl_none_$2 $LR; return; fi
  local api=""; case $1 in all_noapi|k|k_copy|k_marker|k_device) api="NVPROF_WRAP_CUPTI_RUNTIME=0" ;; esac
  t fl_$1_$2 $INJ NVPROF_WRAP_CUPTI_DIR=$S/cap_$1_$2 NVPROF_WRAP_CUPTI_TUNE="${TUNE[$1]}" $api $LR
}
step facts
{ nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nproc; uptime; } >> $LOG 2>&1
step overhead
V=(${VARIANTS:-none all all_noapi k k_api k_copy k_marker k_device})
for rep in $(seq ${ROUNDS:-4}); do
  for (( i = 0; i < ${#V[@]}; i++ )); do variant ${V[$(( (i + rep) % ${#V[@]} ))]} $rep; done
done
# the discard runs leave no kernel rows: count launches from one traced (not discarded) run
t fl_count_1 env PYTHONPATH=$PWD/nvprof_wrap/tracer/inject:$PYTHONPATH NVPROF_WRAP_CUPTI_DIR=$S/cap_cupti_1 $LR
step tune
for d in $S/cap_*_1; do
  for f in $d/cupti-*.sqlite $d/cupti-*.sqlite.partial; do
    [ -f "$f" ] && python3 -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key IN ('tune','kinds','api_records')\").fetchall(); print(sys.argv[2], r)" "$f" "$(basename $d)"
  done
done > $S/tune.txt 2>&1
step summary
python3 benchmarks/gpu/cupti_floor_summary.py $S --variants $(IFS=,; echo "${V[*]}") > $S/summary.md 2>> $LOG
cat $S/summary.md $S/tune.txt >> $LOG
step end
cp $LOG $S/summary.md $S/tune.txt ${OUT:-/tmp} 2>/dev/null
