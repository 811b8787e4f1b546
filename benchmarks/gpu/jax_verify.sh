#!/usr/bin/env bash
# Issue 43's "done when" on the H200, from our wheel in a fresh venv (the machine's own jax beside it):
#   jax_mnist    jax's examples/mnist_classifier.py, unmodified, under `run --backend nsys` (which now asks nsys for
#                each kernel of a CUDA graph and XLA for its HLO dump), then `verify` of the same command: Nsight
#                Compute's tensor-pipe counters on the kernels with the most time in that run, attached to it
#   kjax_bf16    workloads/keras_transformer.py on Keras' JAX backend, bf16, the same way
#   exp_kjax     the seed's experiment on Keras' JAX backend, fp32 and mixed, with --annotate keras
#   mnist_cublas the MNIST example with --xla_gpu_enable_triton_gemm=false: XLA's GEMMs as cuBLAS calls, the names of
#                JAX before its Triton GEMMs
# Each job runs with JAX's persistent compilation cache in one folder: `verify`'s run loads the executables its
# `run` compiled, so Nsight Compute measures the very kernels the report names and XLA does not autotune under it
# (JAX autotuning under ncu ended in a segfault: benchmarks/gpu/jax_captures.sh).
# Here first: the wheel of HEAD in .whl, .gpu/jax/examples as for jax_captures.sh.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/jax_verify.sh
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/s43v}; R=$S/runs; P=$S/rep; O=${OUT:-/tmp/out43v}
BUDGET=${BUDGET:-560}
RUNS=" ${RUNS:-jax_mnist kjax_bf16 exp_kjax mnist_cublas} "
mkdir -p $R $P $O
source $REPO/benchmarks/gpu/jax_common.sh
export NO_COLOR=1 COLUMNS=150 PYTHONUNBUFFERED=1 NVPROF_WRAP_NSYS=${NSYS:-} NVPROF_WRAP_HISTORY=$S/history.sqlite
export XZ_OPT='-T0 -6' XLA_PYTHON_CLIENT_PREALLOCATE=false
export JAX_COMPILATION_CACHE_DIR=$S/jax-cache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1
export NVPROF_WRAP_NCU=${NCU:-$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
step() { echo; echo "=== $(date +%T) [+${SECONDS}s] $*"; }
want() { case "$RUNS" in *" $1 "*) ;; *) return 1 ;; esac
         local left=$((BUDGET - SECONDS)); [ $left -ge $2 ] || { step "SKIP $1: $left s left, it needs $2"; return 1; }; }
packreports() { tar -cJf $O/reports.tar.xz -C $S rep; }
pack() { (cd $R && tar -cJf $O/$1.tar.xz --exclude=run.sqlite --exclude='*.nsys-rep' --exclude='*.qdstrm' "$1") \
           && ls -la $O/$1.tar.xz; }
report() {  # report NAME [ARGS]: table, JSON, per-step table of the run folder NAME
  local n=$1; shift
  $W report $R/$n "$@" > $P/$n.txt 2>&1; echo "--- report $n (rc $?)"; head -60 $P/$n.txt | cut -c1-400
  $W report $R/$n "$@" --format json -o $P/$n.json 2>&1 | tail -2
  $W report $R/$n "$@" --per-step > $P/$n.per_step.txt 2>&1; head -12 $P/$n.per_step.txt
  packreports
}
verify() {  # verify NAME CMD...: ncu's counters on the top kernels of run NAME, attached to it, reported again
  local n=$1; shift
  step "verify $n"
  timeout -s INT -k 10 200 $W verify --runs $R --top 25 --launch-count 300 -o $R/verify_$n -- "$@" \
    > $P/verify_$n.txt 2>&1; echo "rc $?"; head -50 $P/verify_$n.txt | cut -c1-300
  local csv; csv=$(ls $R/verify_$n/*.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && cp $csv $P/verify_$n.csv && ls -la $P/verify_$n.csv
  [ -n "$csv" ] && $W verify --from $csv $R/$n --format json -o $P/verify_$n.attached.json 2>&1 | tail -2
  report $n
}

main() {
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,memory.used --format=csv
  echo "NSYS=$NSYS NCU=$NVPROF_WRAP_NCU"
  jax_venv
  jax_mnist
  cd $S/jax
  if want jax_mnist 120; then
    step "jax_mnist: run --backend nsys"
    timeout -s INT -k 10 150 $W run --backend nsys --gpu-metrics-frequency 1000 -o $R/jax_mnist -- \
      $V/python -m examples.mnist_classifier > $P/jax_mnist.run.txt 2>&1; echo "rc $?"; tail -4 $P/jax_mnist.run.txt
    ls -la $R/jax_mnist; du -sh $R/jax_mnist/xla-dump 2>/dev/null
    report jax_mnist
    verify jax_mnist $V/python -m examples.mnist_classifier
    pack jax_mnist
  fi
  if want kjax_bf16 120; then
    step "kjax_bf16: run --backend nsys"
    KERAS_BACKEND=jax timeout -s INT -k 10 180 $W run --backend nsys --gpu-metrics-frequency 1000 -o $R/kjax_bf16 -- \
      $V/python $REPO/workloads/keras_transformer.py --precision bf16 --epochs 2 --samples 1024 \
      > $P/kjax_bf16.run.txt 2>&1; echo "rc $?"; tail -4 $P/kjax_bf16.run.txt
    report kjax_bf16
    KERAS_BACKEND=jax verify kjax_bf16 $V/python $REPO/workloads/keras_transformer.py --precision bf16 --epochs 2 \
      --samples 1024
    pack kjax_bf16
  fi
  if want exp_kjax 120; then
    step "exp_kjax: the seed's experiment on Keras' JAX backend, --annotate keras"
    cd $S
    KERAS_BACKEND=jax timeout -s INT -k 10 240 $W experiment reuters_mlp --precisions fp32,mixed --backend nsys \
      --annotate keras -o $R/exp_kjax -- --epochs 3 > $P/exp_kjax.txt 2>&1; echo "rc $?"; tail -30 $P/exp_kjax.txt | cut -c1-300
    $W experiment reuters_mlp --no-run -o $R/exp_kjax --format json > $P/exp_kjax.json 2>&1
    for d in $R/exp_kjax/*/; do $W report $d > $P/exp_kjax_$(basename $d).txt 2>&1; head -30 $P/exp_kjax_$(basename $d).txt | cut -c1-300; done
    packreports
  fi
  if want mnist_cublas 60; then
    step "mnist_cublas: --xla_gpu_enable_triton_gemm=false"
    cd $S/jax
    XLA_FLAGS=--xla_gpu_enable_triton_gemm=false JAX_COMPILATION_CACHE_DIR=$S/jax-cache-cublas timeout -s INT -k 10 150 \
      $W run --backend nsys -o $R/mnist_cublas -- $V/python -m examples.mnist_classifier > $P/mnist_cublas.run.txt 2>&1
    echo "rc $?"; report mnist_cublas
  fi
  step "end"; ls -la $O
}
main 2>&1 | tee $O/jax_verify.log
