#!/usr/bin/env bash
# Issue 22 on the GPU machine: every path from a wheel installed into a fresh venv, run outside the checkout.
# Here first: bash ../shared/device/prep.sh pyahocorasick; rm .whl/cupti_python-* .whl/pyelftools-* (no cupti-python there);
#   python3 -m pip wheel -q --no-deps --no-build-isolation -w .whl .     (our wheel beside the dependencies')
#   and the unmodified public scripts in .gpu/ (git-ignored): .gpu/nanogpt/{train,model,configurator}.py and
#   config/train_shakespeare_char.py (karpathy/nanoGPT), .gpu/imagenet/main.py (pytorch/examples).
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/public_scripts_steps.sh A   (then B)
#   A: the venv; doctor; the API, the cell magic and the Keras callback (no cupti-python); nanoGPT and the HF
#      Trainer, each under nsys and cupti, reported with --steps 10:40.   B: experiment reuters_mlp (all
#      precisions); pytorch/examples ImageNet (--dummy, stopped by SIGINT after 80 s) under nsys and cupti.
#   C: experiment reuters_mlp --precisions bf16.
# $OUT: public_scripts-A.log / public_scripts-B.log and the JSON reports (committed: benchmarks/results/public_scripts/).
set -u
PART=${1:-A}
REPO=$PWD
unset PYTHONPATH  # gpu-env.sh's /tmp/site holds our wheel too: nothing but the venv may provide nvprof_wrap
S=/tmp/s6; R=$S/runs; LOG=${OUT:-/tmp}/public_scripts-$PART.log
mkdir -p $R
export KERAS_BACKEND=torch NO_COLOR=1 COLUMNS=150 NVPROF_WRAP_NSYS=$NSYS NVPROF_WRAP_HISTORY=$S/history.sqlite
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $(date +%T) $*" >> $LOG; }
t() {  # t NAME CMD...: run, log wall time and exit code, keep the output
  local name=$1; shift; local s=$EPOCHREALTIME
  "$@" > $R/$name.txt 2>&1; local rc=$?
  echo "wall $name $(awk "BEGIN{print $EPOCHREALTIME - $s}") rc $rc" >> $LOG; tail -${TAIL:-25} $R/$name.txt >> $LOG
}
V=$S/venv/bin; W=$V/nvprof-wrap
if [ ! -x $W ]; then
  step venv
  python3 -m venv --without-pip $S/venv
  TORCH_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  VSITE=$($V/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$TORCH_SITE" > $VSITE/the-users-torch.pth   # the user's environment: torch and friends, not our package
  python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile .whl/*.whl >> $LOG 2>&1
fi
cd $S
$V/python -c "import nvprof_wrap, keras, torch, sys; print('nvprof_wrap from', nvprof_wrap.__file__, 'keras', keras.__version__, 'torch', torch.__version__); import importlib.util as u; print('cupti-python importable:', u.find_spec('cupti') is not None)" >> $LOG 2>&1
if [ "$PART" = A ]; then
  step doctor; t doctor $W doctor
  step api; cp $REPO/benchmarks/gpu/python_api_check.py $S/; TAIL=12 t api timeout 300 $V/python $S/python_api_check.py $R/api
  step nanogpt
  rm -rf $S/nanogpt; cp -r $REPO/.gpu/nanogpt $S/nanogpt; mkdir -p $S/nanogpt/data/shakespeare_char
  $V/python -c "
import numpy as np, pickle
rng = np.random.default_rng(0)  # the character-level set's shape (vocab 65); prepare.py would download the text
for split, n in (('train', 1_000_000), ('val', 100_000)):
    rng.integers(0, 65, n, dtype=np.uint16).tofile(f'$S/nanogpt/data/shakespeare_char/{split}.bin')
pickle.dump({'vocab_size': 65}, open('$S/nanogpt/data/shakespeare_char/meta.pkl', 'wb'))"
  cd $S/nanogpt
  NANO="config/train_shakespeare_char.py --compile=False --max_iters=60 --eval_interval=1000 --eval_iters=2 --log_interval=20"
  for b in nsys cupti; do
    t nano_$b $W run --backend $b -o $R/nano_$b -- $V/python train.py $NANO
    t nano_${b}_steps $W report $R/nano_$b --steps 10:40
    $W report $R/nano_$b --steps 10:40 --format json -o ${OUT:-/tmp}/nano_${b}_steps.json >> $LOG 2>&1
  done
  cd $S
  step hf_trainer; cp $REPO/benchmarks/gpu/hf_trainer_job.py $S/
  for b in cupti nsys; do
    t hf_$b $W run --backend $b -o $R/hf_$b -- $V/python $S/hf_trainer_job.py $S/hfout
    t hf_${b}_steps $W report $R/hf_$b --steps 10:40
    $W report $R/hf_$b --steps 10:40 --format json -o ${OUT:-/tmp}/hf_${b}_steps.json >> $LOG 2>&1
  done
elif [ "$PART" = B ]; then
  step experiment; TAIL=20 t experiment $W experiment reuters_mlp -o $R/exp
  step imagenet; rm -rf $S/imagenet; cp -r $REPO/.gpu/imagenet $S/imagenet; cd $S/imagenet
  for b in nsys cupti; do
    t imnet_$b timeout -s INT 80 $W run --backend $b -o $R/imnet_$b -- $V/python main.py --dummy -a resnet18 -b 64 -j 8 --gpu 0 -p 20
    t imnet_${b}_steps $W report $R/imnet_$b --steps 10:40
    $W report $R/imnet_$b --steps 10:40 --format json -o ${OUT:-/tmp}/imnet_${b}_steps.json >> $LOG 2>&1
  done
elif [ "$PART" = C ]; then  # the precision the default list leaves out
  step experiment_bf16; TAIL=8 t experiment_bf16 $W experiment reuters_mlp --precisions bf16 -o $R/exp_bf16
fi
step end
