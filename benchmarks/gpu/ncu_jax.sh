# Sourced by the Nsight Compute scripts on JAX jobs (ncu_xla_wrapped.sh, ncu_cudnn_convs.sh), from the repo root on
# the device machine with .whl and .debs carried, after `source .debs/gpu-env.sh` and setting NAME (the log's name)
# and S (the scratch folder): R (runs) and O ($OUT) made, LOG emptied, the venv of venv.sh (V, W, step, t), the
# environment of a Keras-on-JAX job under our tools, NCU (the newest ncu) and M (the tensor-pipe metrics of sm_90,
# nvprof_wrap.classify.counters.metrics_for).
set -u
REPO=$PWD
unset PYTHONPATH
R=$S/runs; O=${OUT:-$S/out}
mkdir -p $R $O
LOG=$O/$NAME.log; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
export NO_COLOR=1 PYTHONUNBUFFERED=1 NVPROF_WRAP_HISTORY=$S/history.sqlite KERAS_BACKEND=jax
export XLA_PYTHON_CLIENT_PREALLOCATE=false NVPROF_WRAP_NSYS=$NSYS
NCU=${NCU:-$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
M=$($V/python -c "from nvprof_wrap.classify.counters import metrics_for; print(','.join(metrics_for(9.0, None)))")
