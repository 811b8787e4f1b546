#!/usr/bin/env bash
# Issue 28 on the GPU machine: where each precision's step time goes, host and GPU (report/series.py), on the seed's
# workload (workloads/reuters_mlp.py, Keras on the torch backend) from our wheel in a fresh venv, under our CUPTI
# tracer and under nsys (the two must tell the same story), and nanoGPT's steps under cupti.
# Here first: bash ../shared/device/prep.sh pyahocorasick; rm -f .whl/nvprof_wrap-*.whl;
#   NVPROF_WRAP_NO_NATIVE=1 python3 -m pip wheel -q --no-deps --no-build-isolation -w .whl .
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/step_time_split.sh
set -u
START=$(date +%s)
REPO=$PWD
unset PYTHONPATH
S=/tmp/steps28; R=$S/runs; LOG=${OUT:-/tmp}/steps.log
mkdir -p $R
export NO_COLOR=1 COLUMNS=200 NVPROF_WRAP_NSYS=$NSYS NVPROF_WRAP_HISTORY=$S/history.sqlite PYTHONUNBUFFERED=1 KERAS_BACKEND=torch
source $REPO/benchmarks/gpu/venv.sh
cp -r $REPO/workloads $S/
step "experiment reuters_mlp fp32,fp16 under cupti"
TAIL=30 t exp_cupti $W experiment reuters_mlp --backend cupti --precisions fp32,fp16 -o $R/exp_cupti
BACKENDS=${BACKENDS:-cupti nsys}
if [[ " $BACKENDS " == *" nsys "* ]]; then
  step "experiment reuters_mlp fp32,fp16 under nsys"
  TAIL=30 t exp_nsys $W experiment reuters_mlp --backend nsys --precisions fp32,fp16 -o $R/exp_nsys
fi
for b in $BACKENDS; do for p in fp32 fp16; do
  d=$(ls -d $R/exp_$b/*$p* 2>/dev/null | head -1)
  step "report --per-step $b $p ($d)"; TAIL=45 t per_step_${b}_$p $W report $d --per-step
  $W report $d --format json -o $S/${b}_$p.json >> $LOG 2>&1
done; done
if [ "${NANO:-1}" = 1 ]; then
nanogpt_copy
cd $S/nanogpt
step "nanoGPT 40 iterations under cupti, --per-step"
TAIL=60 t nano_cupti $W run --backend cupti -o $R/nano_cupti --per-step -- $V/python train.py config/train_shakespeare_char.py --compile=False --max_iters=40 --eval_interval=100000 --eval_iters=2 --log_interval=10 --always_save_checkpoint=False
fi
cd $S
for b in $BACKENDS; do for p in fp32 fp16; do  # the captures, gzipped, where small enough to come back
  f=$(ls $R/exp_$b/$p/*.sqlite 2>/dev/null | head -1); [ -n "$f" ] && gzip -c "$f" > ${OUT:-/tmp}/${b}_${p}_$(basename $f).gz
done; done
find ${OUT:-/tmp} -name "*.gz" -size +15M -delete
cp $S/*.json ${OUT:-/tmp}/ 2>/dev/null
ls -la ${OUT:-/tmp} >> $LOG
step "done in $(( $(date +%s) - START )) s"
