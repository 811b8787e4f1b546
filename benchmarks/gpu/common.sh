# Before a GPU run, here: bash ../shared/device/prep.sh pyahocorasick — the classifier imports pyahocorasick, which
# the GPU machine lacks and prep.sh's own list leaves out (without it `python3 -m nvprof_wrap` fails to import there).
# Sourced by the GPU scripts (backends_survey.sh, backend_overhead.sh) on the device machine, from the repo root
# with .whl and .debs carried: environment, and the step / timed-run helpers that write the run's log ($S/session.log).
S=/tmp/nvw-session; R=$S/runs; LOG=$S/session.log
mkdir -p $R
[ -n "${NSYS:-}" ] || source .debs/gpu-env.sh  # the device command may have sourced it already
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERAS_BACKEND=torch NO_COLOR=1 COLUMNS=150 NVPROF_WRAP_NSYS=$NSYS
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W="python3 -m nvprof_wrap"
step() { echo "=== $(date +%T) $*" >> $LOG; }
t() {  # t NAME CMD...: run, log wall time and exit code
  local name=$1; shift; local s=$EPOCHREALTIME
  "$@" > $R/$name.txt 2>&1; local rc=$?
  echo "wall $name $(awk "BEGIN{print $EPOCHREALTIME - $s}") rc $rc" >> $LOG
}
