#!/usr/bin/env bash
# The numerics recorder on Keras's JAX backend, on the H200, from our wheel in a fresh venv (the machine's own jax
# and torch beside it):
#   capture   the seed's MLP (workloads/reuters_mlp.py, Keras 2 numerics, 2 epochs) in fp16 and mixed under
#             `run --numerics` with Nsight Systems: every step recorded, fp16 "broken" with its cause, mixed healthy;
#             then `report` of each run folder (terminal and JSON)
#   cost      the same job in fp16 under `run --backend none` with and without --numerics, interleaved A B A B: the
#             recorder's own time (numerics end.overhead_s) against the job's wall time, and the losses equal
# ROUNDS=0 skips the cost rounds; KEEP=1 brings each capture's nsys.sqlite back gzipped (as tests/data/h100_runs'
# keras_jax_fp16_numerics_nsys was: its README says how it was trimmed).
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl.
# There, carrying .whl .debs:   source .debs/gpu-env.sh; bash benchmarks/gpu/numerics_jax.sh
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/snjax}; R=$S/runs; O=${OUT:-/tmp/outnjax}; ROUNDS=${ROUNDS:-2}
mkdir -p $R $O
LOG=$O/numerics_jax.log; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
export NO_COLOR=1 PYTHONUNBUFFERED=1 NVPROF_WRAP_HISTORY=$S/history.sqlite KERAS_BACKEND=jax
export NVPROF_WRAP_NSYS=$NSYS XLA_PYTHON_CLIENT_PREALLOCATE=false
SEED="$REPO/workloads/reuters_mlp.py --samples 2048 --verbose 0 --keras2-numerics all --epochs 2"
step "versions"
$V/python -c "import jax, keras; print('jax', jax.__version__, jax.devices(), 'keras', keras.__version__)" >> $LOG 2>&1
for p in ${CAPTURES-fp16 mixed}; do  # CAPTURES= : the cost rounds alone
  step "capture $p: run --numerics under nsys"
  (cd $S && TAIL=40 t cap_$p timeout -s INT -k 10 180 $W run --numerics --no-report -o $R/cap_$p -- \
     $V/python $SEED --precision $p)
  TAIL=60 t rep_$p timeout 90 $W report $R/cap_$p
  timeout 90 $W report $R/cap_$p --format json -o $O/report_$p.json >> $LOG 2>&1
done
for round in $(seq 1 $ROUNDS); do
  for mode in plain numerics; do
    flag=""; [ $mode = numerics ] && flag="--numerics"
    step "cost $mode round $round"
    (cd $S && TAIL=12 t cost_${mode}_$round timeout -s INT -k 10 90 $W run --backend none $flag --no-report \
       -o $R/cost_${mode}_$round -- $V/python $SEED --precision fp16 --verbose 2)
  done
done
step "the recorder's own time (end records) and the losses"
for f in $(find $R -name 'numerics*.jsonl*' | sort); do
  echo "$f: steps $(grep -c '"step"' $f 2>/dev/null); $(grep -h '"end"' $f 2>/dev/null | tail -1 | cut -c1-300)" >> $LOG
done
for f in $R/cost_*.txt; do echo "$(basename $f): $(grep -o 'loss: [0-9.e+-]*\|loss: nan' $f | tr '\n' ' ')" >> $LOG; done
ls -R $R | head -60 >> $LOG
if [ "${KEEP:-0}" = 1 ]; then
  for p in fp16 mixed; do
    for f in $R/cap_$p/*.sqlite; do
      case $f in */run.sqlite) continue;; esac
      gzip -9 -c $f > $O/${p}_$(basename $f).gz; cp $R/cap_$p/manifest.json $O/${p}_manifest.json
    done
  done
fi
(cd $R && tar -cJf $O/numerics_jax_runs.tar.xz --exclude='*.sqlite' --exclude='*.nsys-rep' .)
cat $LOG
