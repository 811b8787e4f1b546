#!/usr/bin/env bash
# The numerics recorder's step cost (issue 48 item 4), on the H200, from our wheel in a fresh venv: the same job with
# and without `run --numerics`, under `run --backend none` (no profiler: the recorder's cost alone), interleaved
# A B A B so the machine's drift falls on both.
#   nanogpt   karpathy/nanoGPT train.py + config/train_shakespeare_char.py, bf16, --compile=False, 200 iterations,
#             --log_interval=1: nanoGPT's own per-iteration times (benchmarks/gpu/nano_iterations.py; iterations
#             20-199); random shakespeare_char tokens (no network there)
#   seed      workloads/reuters_mlp.py (the seed's Keras MLP on the torch backend), fp32, 4 epochs: the recorder's own
#             time (numerics end.overhead_s) against the job's wall time
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl; nanoGPT's sources in .gpu/nanogpt.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/numerics_cost.sh
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/snum}; R=$S/runs; O=${OUT:-/tmp/outnum}; ROUNDS=${ROUNDS:-2}
mkdir -p $R $O
LOG=$O/numerics_cost.log; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
export NO_COLOR=1 PYTHONUNBUFFERED=1 NVPROF_WRAP_HISTORY=$S/history.sqlite
rm -rf $S/nanogpt; cp -r $REPO/.gpu/nanogpt $S/nanogpt; mkdir -p $S/nanogpt/data/shakespeare_char
$V/python -c "
import numpy as np, pickle
rng = np.random.default_rng(0)
for split, n in (('train', 1_000_000), ('val', 100_000)):
    rng.integers(0, 65, n, dtype=np.uint16).tofile('$S/nanogpt/data/shakespeare_char/%s.bin' % split)
pickle.dump({'vocab_size': 65}, open('$S/nanogpt/data/shakespeare_char/meta.pkl', 'wb'))"
NANO="train.py config/train_shakespeare_char.py --dtype=bfloat16 --compile=False --max_iters=200 --eval_interval=1000 --eval_iters=2 --log_interval=1"
for round in $(seq 1 $ROUNDS); do
  for mode in plain numerics; do
    flag=""; [ $mode = numerics ] && flag="--numerics"
    step "nanogpt $mode round $round"
    (cd $S/nanogpt && t nano_${mode}_$round timeout -s INT -k 10 150 $W run --backend none $flag --no-report \
       -o $R/nano_${mode}_$round -- $V/python $NANO)
    $V/python $REPO/benchmarks/gpu/nano_iterations.py nano_${mode}_$round $R/nano_${mode}_$round.txt >> $LOG 2>&1
    step "seed $mode round $round"
    (cd $S && KERAS_BACKEND=torch t seed_${mode}_$round timeout -s INT -k 10 120 $W run --backend none $flag \
       --no-report -o $R/seed_${mode}_$round -- $V/python $REPO/workloads/reuters_mlp.py --precision fp32 --epochs 4 \
       --verbose 0)
  done
done
step "the recorder's own time (end records)"
for f in $(find $R -name 'numerics*.jsonl*' | sort); do
  echo "$f: $(grep -h '"end"' $f 2>/dev/null | tail -1 | cut -c1-300)" >> $LOG
done
ls -R $R | head -60 >> $LOG
(cd $R && tar -cJf $O/numerics_runs.tar.xz --exclude='*.sqlite' .)
cat $LOG
