#!/usr/bin/env bash
# XLA's cuBLAS GEMMs inside and outside CUDA graphs, on the GPU machine, from our wheel in a fresh venv: the same
# jobs run twice under `run --backend nsys` with XLA's HLO dump, once as XLA runs them (a jitted step's thunks as
# CUDA graphs: its command buffers) and once with command buffers off (--xla_gpu_enable_command_buffer=: every
# thunk launched on its own, inside XLA's NVTX range of it) — the second says which custom call launched each
# cuBLAS kernel, and so checks what the first's graph nodes give (classify/xla_flops.py per_graph_node).
#   mnist   jax's examples/mnist_classifier.py, unmodified, --xla_gpu_enable_triton_gemm=false (its dots as
#           cuBLAS custom calls); synthetic MNIST files as benchmarks/gpu/jax_common.sh writes them
#   kjax    workloads/keras_transformer.py on Keras' JAX backend in bf16, one epoch (cuBLAS and cuDNN custom calls)
#   kcnn    Keras's examples/demo_mnist_convnet.py, unmodified, on its JAX backend (cuDNN convolution custom calls),
#           in float32 and (kcnn_bf16, command buffers on only) under the mixed_bfloat16 policy; synthetic MNIST from
#           benchmarks/gpu/keras_synthetic_mnist.py
# Here first (from the repo root): bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD into .whl; jax's examples into
#   .gpu/jax/examples/{__init__,datasets,mnist_classifier}.py; Keras's into .gpu/keras/demo_mnist_convnet.py.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/xla_graph_gemms.sh
# Comes back in $OUT: each run's capture trimmed to a few steps, its manifest, logs and training step's dump, and
# the reports of the whole captures.
# STEPS=A:B keeps steps A..B-1 (100:110); MNIST_DUMPED= packs every module's dump, not only the training step's
# (STEPS=464:474 MNIST_DUMPED=: the first epoch's end, its accuracy pass eager programs of their own). The convnet:
# CNN_STEPS=A:B, CNN_DUMPED=jit_ (its train, validation and test programs), CNN_BF16= (float32 only):
# `ONLY=graphs RUNS=kcnn CNN_STEPS=419:424 CNN_DUMPED=jit_ CNN_BF16=` keeps the first epoch's end and validation.
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/sgg}; R=$S/runs; P=$S/rep; O=${OUT:-/tmp/outgg}
RUNS=" ${RUNS:-mnist kjax} "
mkdir -p $R $P $O
source $REPO/benchmarks/gpu/jax_common.sh
export NO_COLOR=1 COLUMNS=150 PYTHONUNBUFFERED=1 NVPROF_WRAP_NSYS=${NSYS:-} NVPROF_WRAP_HISTORY=$S/history.sqlite
export XZ_OPT='-T0 -6' XLA_PYTHON_CLIENT_PREALLOCATE=false
step() { echo; echo "=== $(date +%T) [+${SECONDS}s] $*"; }
pack() {  # pack NAME: steps STEPS of its capture (benchmarks/trim_steps.py, no GPU_METRICS), and in NAME.tar.xz its
  # manifest, logs and the dump's text files of the modules named DUMPED (the training step's)
  $V/python $REPO/benchmarks/trim_steps.py $R/$1/nsys.sqlite $O/$1.nsys.sqlite.gz ${STEPS:-100:110} \
    --without GPU_METRICS && ls -la $O/$1.nsys.sqlite.gz
  (cd $S && tar -cJf $O/$1.tar.xz -C $R $1/manifest.json $1/stdout.log $1/stderr.log \
     -C $S $(cd $S && find xla_$1 -name "*${DUMPED:-}*.txt")) && ls -la $O/$1.tar.xz
}
report() { $W report $R/$1 > $P/$1.txt 2>&1; echo "--- report $1 (rc $?)"; head -60 $P/$1.txt
           $W report $R/$1 --format json -o $P/$1.json 2>&1 | tail -1; tar -cJf $O/reports.tar.xz -C $S rep; }
both() {  # both NAME COMMAND...: the job with command buffers (NAME_graphs) and without (NAME_nographs)
  local name=$1; shift
  for mode in ${ONLY:-graphs nographs}; do
    local flags="${EXTRA_XLA:-} --xla_dump_to=$S/xla_${name}_$mode --xla_dump_hlo_as_text"
    [ $mode = nographs ] && flags="$flags --xla_gpu_enable_command_buffer="
    step "${name}_$mode: XLA_FLAGS=$flags"
    rm -rf $S/xla_${name}_$mode $R/${name}_$mode
    XLA_FLAGS="$flags" timeout -s INT -k 10 200 $W run --backend nsys -o $R/${name}_$mode -- "$@" \
      > $P/${name}_$mode.run.txt 2>&1; echo "rc $?"; tail -8 $P/${name}_$mode.run.txt
    pack ${name}_$mode; report ${name}_$mode
  done
}

step "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv
jax_venv
case "$RUNS" in *" mnist "*)
  jax_mnist; cd $S/jax
  DUMPED=${MNIST_DUMPED-jit_update} EXTRA_XLA=--xla_gpu_enable_triton_gemm=false both mnist $V/python -m examples.mnist_classifier ;; esac
case "$RUNS" in *" kjax "*)
  cd $S; DUMPED=jit_train_step STEPS=20:24 KERAS_BACKEND=jax both kjax $V/python $REPO/workloads/keras_transformer.py --precision bf16 --epochs 1 ;; esac
case "$RUNS" in *" kcnn "*)
  cd $S; K="$V/python $REPO/benchmarks/gpu/keras_synthetic_mnist.py"
  DUMPED=${CNN_DUMPED:-jit_train_step} STEPS=${CNN_STEPS:-20:24} KERAS_BACKEND=jax both kcnn $K \
    $REPO/.gpu/keras/demo_mnist_convnet.py
  [ -z "${CNN_BF16-1}" ] || DUMPED=jit_train_step STEPS=${CNN_STEPS:-20:24} KERAS_BACKEND=jax ONLY=graphs \
    both kcnn_bf16 $K --policy mixed_bfloat16 $REPO/.gpu/keras/demo_mnist_convnet.py ;; esac
step "end"; ls -la $O
