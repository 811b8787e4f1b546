#!/usr/bin/env bash
# Issue 25 "done when" on the GPU machine, from our wheel in a fresh venv (the user's torch and nvidia-ml-py beside):
#   A: benchmarks/gpu/hardware_phases.py (fp32 TF32 off, Triton bf16, fp32 layer norm, cuBLAS bf16, fp16 elementwise, idle)
#      under `run --backend nsys` and `--backend cupti`, reported per phase with and without the Triton cache's
#      compiled code; a user's own `nsys profile --gpu-metrics-devices=0` capture reported without re-running.
#   B: the sampler's cost: nanoGPT (karpathy/nanoGPT, unmodified, .gpu/nanogpt) under `run --backend cupti` with and
#      without --no-hardware, 3 interleaved rounds; nsys with and without GPU metrics, one round (wall, capture size).
# Here first: python3 -m pip wheel -q --no-deps --no-build-isolation -w .whl .  (our wheel beside prep.sh's)
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/hardware_truth.sh A   (then B)
set -u
PART=${1:-A}
REPO=$PWD
unset PYTHONPATH
S=/tmp/hw25; R=$S/runs; LOG=${OUT:-/tmp}/hw_truth-$PART.log
mkdir -p $R
export NO_COLOR=1 COLUMNS=160 NVPROF_WRAP_NSYS=$NSYS NVPROF_WRAP_HISTORY=$S/history.sqlite PYTHONUNBUFFERED=1
source $REPO/benchmarks/gpu/venv.sh
cp $REPO/benchmarks/gpu/hardware_phases.py $S/
cd $S
$V/python -c "import nvprof_wrap, pynvml; print('nvprof_wrap from', nvprof_wrap.__file__)" >> $LOG 2>&1
mkdir -p $S/empty-cache
if [ "$PART" = A ]; then
  for b in nsys cupti; do
    step "phases under $b"
    TRITON_CACHE_DIR=$S/tc_$b t ph_$b $W run --backend $b -o $R/ph_$b -- $V/python hardware_phases.py
    step "phases under $b, reported without the Triton kernel's compiled code"
    t ph_${b}_nocode $W report $R/ph_$b --triton-cache $S/empty-cache
    $W report $R/ph_$b --triton-cache $S/empty-cache --format json -o ${OUT:-/tmp}/ph_$b.json >> $LOG 2>&1
    ls -la $R/ph_$b >> $LOG
  done
  $W report $R/ph_cupti --format html -o ${OUT:-/tmp}/ph_cupti.html >> $LOG 2>&1
  step "a user's own nsys capture with GPU metrics"
  $NSYS profile -t cuda,nvtx --gpu-metrics-devices=0 -o $S/own --force-overwrite true $V/python hardware_phases.py \
    --seconds 0.8 >> $R/own_profile.txt 2>&1
  t own_rep $W report $S/own.nsys-rep --triton-cache $S/empty-cache
  TAIL=12 t own_sqlite $W report $S/own.sqlite --triton-cache $S/empty-cache --format markdown
fi
if [ "$PART" = B ]; then
  for b in nsys cupti; do  # the runs of part A, in a fresh store: the hardware alone decides the Triton kernel
    [ -d $R/ph_$b ] && TAIL=30 t ph_${b}_fresh $W report $R/ph_$b --store $S/fresh_$b.sqlite --triton-cache $S/empty-cache
    grep -h "run of\|tensor-pipe activity" $R/ph_$b.txt >> $LOG
  done
  nanogpt_copy
  cd $S/nanogpt
  NANO="config/train_shakespeare_char.py --compile=False --max_iters=500 --eval_interval=10000 --eval_iters=2 --log_interval=100"
  for round in 1 2 3; do
    for mode in off on; do
      flag=$([ $mode = off ] && echo --no-hardware || echo "")
      step "repeat $round cupti hardware $mode"
      TAIL=3 t nano_cupti_${mode}_$round $W run --backend cupti $flag --no-report -o $R/nano_cupti_${mode}_$round -- \
        $V/python train.py $NANO
      $V/python -c "import json,sys; m=json.load(open(sys.argv[1])); print('job wall_s', sys.argv[2], m['wall_s'], \
        m.get('hardware'))" $R/nano_cupti_${mode}_$round/manifest.json cupti_${mode}_$round >> $LOG
    done
  done
  for mode in off on; do
    flag=$([ $mode = off ] && echo --no-hardware || echo "")
    step "nsys hardware $mode"
    TAIL=3 t nano_nsys_$mode $W run --backend nsys $flag --no-report -o $R/nano_nsys_$mode -- $V/python train.py $NANO
    du -sh $R/nano_nsys_$mode/* >> $LOG
    $V/python -c "import json,sys; m=json.load(open(sys.argv[1])); print('job wall_s', sys.argv[2], m['wall_s'], \
      m.get('hardware'))" $R/nano_nsys_$mode/manifest.json nsys_$mode >> $LOG
  done
  TAIL=30 t nano_nsys_report $W report $R/nano_nsys_on --steps 100:400
  TAIL=30 t nano_cupti_report $W report $R/nano_cupti_on_3 --steps 100:400
  $W report $R/nano_nsys_on --steps 100:400 --format json -o ${OUT:-/tmp}/nano_nsys_on.json >> $LOG 2>&1
  grep -h "job wall_s" $LOG
fi
step done
