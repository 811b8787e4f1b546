#!/usr/bin/env bash
# Nsight Compute's tensor-pipe counters on cuDNN's convolution kernels of Keras's examples/demo_mnist_convnet.py
# (unmodified, .gpu/keras; synthetic MNIST: benchmarks/gpu/keras_synthetic_mnist.py) on Keras's JAX backend, in
# float32 and under mixed_bfloat16: each launch's matrix instructions net of HFMA2 (nvprof_wrap.classify.counters) —
# the evidence of rules.toml's cuDNN convolution rules — then `verify` of the CSV against a run of the same job.
# -k regex / -c keep JAX under ncu within a call.
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl; the example in .gpu/keras/demo_mnist_convnet.py.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/ncu_cudnn_convs.sh
NAME=ncu_cudnn_convs S=${S:-/tmp/sncuc}
source benchmarks/gpu/ncu_jax.sh
JOB="$REPO/benchmarks/gpu/keras_synthetic_mnist.py"
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
