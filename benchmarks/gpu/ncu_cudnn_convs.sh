#!/usr/bin/env bash
# Nsight Compute's tensor-pipe counters on cuDNN's convolution kernels of Keras's examples/demo_mnist_convnet.py
# (unmodified, .gpu/keras; synthetic MNIST: benchmarks/gpu/keras_synthetic_mnist.py) on Keras's JAX backend, in
# float32 and under mixed_bfloat16: each launch's matrix instructions net of HFMA2 (nvprof_wrap.classify.counters) —
# the evidence of rules.toml's cuDNN convolution rules — then `verify` of the CSV against a run of the same job.
# -k regex / -c keep JAX under ncu within a call.
# Here first: bash ../shared/device/prep.sh; a wheel of HEAD in .whl; the example in .gpu/keras/demo_mnist_convnet.py.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/ncu_cudnn_convs.sh
set -u
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/sncuc}; R=$S/runs; O=${OUT:-/tmp/outncuc}
mkdir -p $R $O
LOG=$O/ncu_cudnn_convs.log; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
export NO_COLOR=1 PYTHONUNBUFFERED=1 NVPROF_WRAP_HISTORY=$S/history.sqlite KERAS_BACKEND=jax
export XLA_PYTHON_CLIENT_PREALLOCATE=false NVPROF_WRAP_NSYS=$NSYS
NCU=${NCU:-$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
JOB="$REPO/benchmarks/gpu/keras_synthetic_mnist.py"
M=$($V/python -c "from nvprof_wrap.classify.counters import metrics_for; print(','.join(metrics_for(9.0, None)))")
for p in ${POLICIES-float32 mixed_bfloat16}; do
  step "ncu $p"
  (cd $S && TAIL=8 t ncu_$p timeout -s INT -k 10 240 $NCU --target-processes all --clock-control none --metrics $M \
     --force-overwrite --export $S/ncu_$p -k "regex:${KERNELS:-(convolve_common_engine|wgrad_alg0_engine|implicit_gemm|ImplicitGemm|ReduceSplitK|nchwToNhwc|nhwcToNchw|init_device_workspace)}" \
     -c ${COUNT:-60} $V/python $JOB --policy $p $REPO/.gpu/keras/demo_mnist_convnet.py)
  $NCU --import $S/ncu_$p.ncu-rep --csv > $O/ncu_$p.csv 2>> $LOG; wc -l $O/ncu_$p.csv >> $LOG
  step "run $p (nsys) and verify"
  (cd $S && TAIL=5 t run_$p timeout -s INT -k 10 180 $W run --no-report -o $R/run_$p -- \
     $V/python $JOB --policy $p $REPO/.gpu/keras/demo_mnist_convnet.py)
  TAIL=60 t verify_$p timeout 120 $W verify --from $O/ncu_$p.csv $R/run_$p
  gzip -f $O/ncu_$p.csv
done
cat $LOG
