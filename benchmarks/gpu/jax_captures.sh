#!/usr/bin/env bash
# JAX/XLA and numerics runs on the H200, from our wheel in a fresh venv (the machine's own jax and torch beside it):
#   numerics     the seed's experiment (Keras on PyTorch) with --keras2-numerics all --numerics, and --try-fix
#   jax_mnist    jax's examples/mnist_classifier.py, unmodified (jax-ml/jax, .gpu/jax/examples), under
#                `run --backend nsys`, with XLA's HLO dump beside (XLA_FLAGS=--xla_dump_to=… --xla_dump_hlo_as_text).
#                datasets.py skips its download when /tmp/jax_example_data holds the files: synthetic ones of
#                MNIST's shape and format are written there first (no network there)
#   jax_window   the same, unmodified, under `run --backend nsys --capture-steps 200:220`: the window counted live
#                from the example's jitted update (tracer/jit_calls.py), the report's steps from XLA's executions
#   jax_mnist_cublas  the same with --xla_gpu_enable_triton_gemm=false: XLA's cuBLAS GEMMs, names as before Triton
#   kjax_bf16    workloads/keras_transformer.py on Keras' JAX backend, bf16, under `run --backend nsys` + HLO dump
#   kjax_xplane  the same outside any profiler, jax.profiler.trace of one epoch with StepTraceAnnotation per batch
#   exp_kjax     `experiment reuters_mlp --precisions fp32,mixed` with KERAS_BACKEND=jax
#   ncu_*        Nsight Compute's tensor-pipe counters on the GEMM-like kernels of jax_mnist and kjax_bf16
#                (-k regex, -c N: JAX under ncu runs past a call's 10 minutes otherwise)
# Here first (from the repo root): bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD into .whl; jax's examples into
#   .gpu/jax/examples/{__init__,datasets,mnist_classifier}.py.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/jax_captures.sh
# Knobs: RUNS (names above), BUDGET (seconds for the whole script; a run that would not fit is skipped).
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH   # gpu-env.sh's /tmp/site holds our wheel too: nothing but the venv may provide nvprof_wrap
S=${S:-/tmp/s43}; R=$S/runs; P=$S/rep; O=${OUT:-/tmp/out43}
BUDGET=${BUDGET:-560}
RUNS=" ${RUNS:-numerics jax_mnist kjax_bf16 ncu_mnist ncu_kjax kjax_xplane jax_mnist_cublas exp_kjax} "
mkdir -p $R $P $O
source $REPO/benchmarks/gpu/jax_common.sh
export NO_COLOR=1 COLUMNS=150 PYTHONUNBUFFERED=1 NVPROF_WRAP_NSYS=${NSYS:-} NVPROF_WRAP_HISTORY=$S/history.sqlite
export XZ_OPT='-T0 -6' XLA_PYTHON_CLIENT_PREALLOCATE=false
NCU=${NCU:-$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
step() { echo; echo "=== $(date +%T) [+${SECONDS}s] $*"; }
want() { case "$RUNS" in *" $1 "*) ;; *) return 1 ;; esac
         local left=$((BUDGET - SECONDS)); [ $left -ge $2 ] || { step "SKIP $1: $left s left, it needs $2"; return 1; }; }
packreports() { tar -cJf $O/reports.tar.xz -C $S rep; }
pack() { (cd $R && tar -cJf $O/$1.tar.xz --exclude=run.sqlite --exclude='*.nsys-rep' "$1") && ls -la $O/$1.tar.xz; }
dump() { (cd $S && find "$1" -name '*.txt' | tar -cJf $P/$1.hlo.tar.xz -T -); ls -la $P/$1.hlo.tar.xz; }
report() {  # report NAME: table, JSON and per-step table of the run folder NAME
  $W report $R/$1 > $P/$1.txt 2>&1; echo "--- report $1 (rc $?)"; head -80 $P/$1.txt
  $W report $R/$1 --format json -o $P/$1.json 2>&1 | tail -2
  $W report $R/$1 --per-step > $P/$1.per_step.txt 2>&1; head -30 $P/$1.per_step.txt
  packreports
}

main() {
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,memory.used --format=csv
  echo "NSYS=$NSYS NCU=$NCU"; $NSYS --version; $NCU --version | tail -1
  jax_venv
  git -C $REPO log -1 --format='checkout HEAD %H' 2>/dev/null

  if want numerics 150; then
    step "numerics: the seed's experiment, Keras 2 numerics, --numerics --try-fix (Keras on PyTorch)"
    cd $S
    KERAS_BACKEND=torch timeout -s INT -k 10 220 $W experiment reuters_mlp --precisions fp32,fp16 --numerics --try-fix \
      -o $R/exp_numerics -- --keras2-numerics all --epochs 3 > $P/exp_numerics.txt 2>&1; echo "rc $?"
    cat $P/exp_numerics.txt | cut -c1-300 | tail -60
    $W experiment reuters_mlp --no-run -o $R/exp_numerics --format json > $P/exp_numerics.json 2>&1
    for d in $R/exp_numerics/*/; do $W report $d --format json -o $P/exp_numerics_$(basename $d).json 2>&1 | tail -1; done
    (cd $R && tar -cJf $O/exp_numerics.tar.xz --exclude='*.sqlite' --exclude='*.nsys-rep' exp_numerics); packreports
  fi

  jax_mnist
  cd $S/jax
  if want jax_mnist 60; then
    step "jax_mnist: examples/mnist_classifier.py under run --backend nsys, HLO dump"
    rm -rf $S/xla_mnist
    XLA_FLAGS="--xla_dump_to=$S/xla_mnist --xla_dump_hlo_as_text" timeout -s INT -k 10 150 \
      $W run --backend nsys --gpu-metrics-frequency 1000 -o $R/jax_mnist -- $V/python -m examples.mnist_classifier \
      > $P/jax_mnist.run.txt 2>&1; echo "rc $?"; tail -30 $P/jax_mnist.run.txt; ls -la $R/jax_mnist
    dump xla_mnist; pack jax_mnist; report jax_mnist
  fi
  if want jax_window 50; then
    step "jax_window: examples/mnist_classifier.py under run --backend nsys --capture-steps 200:220"
    timeout -s INT -k 10 150 $W run --backend nsys --capture-steps 200:220 -o $R/jax_window -- \
      $V/python -m examples.mnist_classifier > $P/jax_window.run.txt 2>&1; echo "rc $?"; tail -30 $P/jax_window.run.txt
    cat $R/jax_window/windows.jsonl; pack jax_window; report jax_window
  fi
  if want ncu_mnist 60; then
    step "ncu_mnist: tensor-pipe counters of the GEMM-like kernels"
    local M; M=$($V/python -c "from nvprof_wrap.classify.counters import metrics_for; print(','.join(metrics_for(9.0, None)))")
    timeout -s INT -k 10 200 $NCU --target-processes all --clock-control none --metrics $M --force-overwrite \
      --export $S/ncu_mnist -k "regex:gemm|dot|cutlass|triton|cublas|matmul|fusion" --launch-skip 3000 -c 60 \
      $V/python -m examples.mnist_classifier > $P/ncu_mnist.log 2>&1; echo "rc $?"; tail -5 $P/ncu_mnist.log
    $NCU --import $S/ncu_mnist.ncu-rep --csv > $P/ncu_mnist.csv 2>&1; wc -l $P/ncu_mnist.csv
    $W verify --from $P/ncu_mnist.csv $R/jax_mnist > $P/ncu_mnist.verify.txt 2>&1; cat $P/ncu_mnist.verify.txt | head -40
  fi
  if want kjax_bf16 70; then
    step "kjax_bf16: Keras transformer on JAX, bf16, under run --backend nsys, HLO dump"
    rm -rf $S/xla_kjax
    KERAS_BACKEND=jax XLA_FLAGS="--xla_dump_to=$S/xla_kjax --xla_dump_hlo_as_text" timeout -s INT -k 10 180 \
      $W run --backend nsys --gpu-metrics-frequency 1000 -o $R/kjax_bf16 -- $V/python $REPO/workloads/keras_transformer.py \
      --precision bf16 --epochs 3 > $P/kjax_bf16.run.txt 2>&1; echo "rc $?"; tail -30 $P/kjax_bf16.run.txt
    dump xla_kjax; pack kjax_bf16; report kjax_bf16
  fi
  if want ncu_kjax 60; then
    step "ncu_kjax: tensor-pipe counters of the transformer's GEMM-like kernels"
    local M; M=$($V/python -c "from nvprof_wrap.classify.counters import metrics_for; print(','.join(metrics_for(9.0, None)))")
    KERAS_BACKEND=jax timeout -s INT -k 10 200 $NCU --target-processes all --clock-control none --metrics $M \
      --force-overwrite --export $S/ncu_kjax -k "regex:gemm|dot|cutlass|triton|cublas|matmul|fusion|flash|attention|xmma|sm90" --launch-skip 4000 -c 80 \
      $V/python $REPO/workloads/keras_transformer.py --precision bf16 --epochs 2 --samples 2048 > $P/ncu_kjax.log 2>&1
    echo "rc $?"; tail -5 $P/ncu_kjax.log
    $NCU --import $S/ncu_kjax.ncu-rep --csv > $P/ncu_kjax.csv 2>&1; wc -l $P/ncu_kjax.csv
    $W verify --from $P/ncu_kjax.csv $R/kjax_bf16 > $P/ncu_kjax.verify.txt 2>&1; head -40 $P/ncu_kjax.verify.txt
  fi
  if want kjax_xplane 40; then
    step "kjax_xplane: jax.profiler.trace with StepTraceAnnotation, no other profiler"
    rm -rf $S/kjax_prof
    KERAS_BACKEND=jax timeout -s INT -k 10 120 $V/python $REPO/workloads/keras_transformer.py --precision bf16 \
      --epochs 2 --samples 512 --jax-profile $S/kjax_prof > $P/kjax_xplane.run.txt 2>&1; echo "rc $?"
    tail -5 $P/kjax_xplane.run.txt; find $S/kjax_prof -type f -exec ls -la {} \;
    (cd $S && tar -cJf $O/kjax_xplane.tar.xz kjax_prof); ls -la $O/kjax_xplane.tar.xz
    for f in $(find $S/kjax_prof -name "*.xplane.pb"); do $W report $f > $P/kjax_xplane.txt 2>&1; head -60 $P/kjax_xplane.txt; done
  fi
  if want jax_mnist_cublas 50; then
    step "jax_mnist_cublas: --xla_gpu_enable_triton_gemm=false"
    rm -rf $S/xla_mnist_cublas
    XLA_FLAGS="--xla_gpu_enable_triton_gemm=false --xla_dump_to=$S/xla_mnist_cublas --xla_dump_hlo_as_text" \
      timeout -s INT -k 10 150 $W run --backend nsys -o $R/jax_mnist_cublas -- $V/python -m examples.mnist_classifier \
      > $P/jax_mnist_cublas.run.txt 2>&1; echo "rc $?"; tail -5 $P/jax_mnist_cublas.run.txt
    dump xla_mnist_cublas; pack jax_mnist_cublas; report jax_mnist_cublas
  fi
  if want exp_kjax 100; then
    step "exp_kjax: the seed's experiment on Keras' JAX backend"
    cd $S
    KERAS_BACKEND=jax timeout -s INT -k 10 $((BUDGET - SECONDS - 15)) $W experiment reuters_mlp --precisions fp32,mixed \
      --backend nsys -o $R/exp_kjax -- --epochs 3 > $P/exp_kjax.txt 2>&1; echo "rc $?"; tail -40 $P/exp_kjax.txt | cut -c1-300
    (cd $R && tar -cJf $O/exp_kjax.tar.xz --exclude=run.sqlite --exclude='*.nsys-rep' exp_kjax); ls -la $O/exp_kjax.tar.xz
    packreports
  fi
  step "end"; ls -la $O
}
main 2>&1 | tee $O/jax_captures.log
