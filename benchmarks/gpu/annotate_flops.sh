#!/usr/bin/env bash
# Achieved TFLOP/s and MFU from the op shapes `run --annotate torch` records (emit_nvtx(record_shapes=True):
# readers/_nvtx_flops.py; issue 41), on the H200, from our wheel in a fresh venv:
#   nanogpt_shapes    karpathy/nanoGPT train.py + config/train_shakespeare_char.py, --dtype=bfloat16 --compile=False,
#                     60 iterations (--log_interval=1: every iteration timed), random shakespeare_char tokens, under `run --backend nsys --annotate torch`:
#                     report table + JSON (whole run and steady steps 10..55); nanoGPT prints its own MFU against the
#                     A100's 312 TFLOP/s, printed here beside ours with that figure rescaled to the H200's bf16 peak
#   nanogpt_noshapes  the same with NVPROF_WRAP_ANNOTATE_SHAPES=0 (the ranges without sizes): what recording the
#                     shapes costs, from nanoGPT's own iteration times (benchmarks/gpu/nano_iterations.py)
#   nanogpt_cupti     the same with shapes under `run --backend cupti`: the CUPTI tracer's capture gives the FLOPs too
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl; nanoGPT's sources in .gpu/nanogpt.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/annotate_flops.sh
# $OUT: annotate_flops.log (everything below), reports.tar.xz (the reports), the run folders without their sqlite.
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
S=${S:-/tmp/sann}; R=$S/runs; O=${OUT:-/tmp/outann}; STEPS=${STEPS:-10:55}
mkdir -p $R $O
LOG=$O/annotate_flops.log; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
export NO_COLOR=1 COLUMNS=150 PYTHONUNBUFFERED=1 NVPROF_WRAP_HISTORY=$S/history.sqlite
nanogpt_copy
NANO="train.py config/train_shakespeare_char.py --dtype=bfloat16 --compile=False --max_iters=60 --eval_interval=1000 --eval_iters=2 --log_interval=1"
H200_BF16=$($V/python -c "from nvprof_wrap.analyses.peaks import lookup, tensor_peak; print(tensor_peak(lookup('NVIDIA H200'), 'bf16'))")

capture() {  # capture NAME BACKEND SHAPES(1|0)
  local n=$1 backend=$2 shapes=$3
  step "$n: --backend $backend --annotate torch, NVPROF_WRAP_ANNOTATE_SHAPES=$shapes"
  (cd $S/nanogpt && NVPROF_WRAP_ANNOTATE_SHAPES=$shapes t $n timeout -s INT -k 10 170 $W run --backend $backend \
     --annotate torch --no-report -o $R/$n -- $V/python $NANO)
  $V/python $REPO/benchmarks/gpu/nano_iterations.py $n $R/$n.txt >> $LOG 2>&1
  grep -h "mfu" $R/$n.txt | tail -3 | $V/python -c "
import re, sys
for line in sys.stdin:
    print(line.rstrip())
    m = re.search(r'mfu (-?[0-9.]+)%', line)
    if m:
        print(f'  nanoGPT MFU rescaled to the H200 bf16 peak ($H200_BF16 TFLOP/s): {float(m[1]) * 312 / $H200_BF16:.2f}%')
" >> $LOG
}
report() {  # report NAME: table + JSON, whole and steady steps
  local n=$1
  $W report $R/$n > $O/$n.txt 2>&1
  $W report $R/$n --format json -o $O/$n.json >> $LOG 2>&1
  $W report $R/$n --steps $STEPS > $O/$n.steps.txt 2>&1
  $W report $R/$n --steps $STEPS --format json -o $O/$n.steps.json >> $LOG 2>&1
  echo "--- $n: report --steps $STEPS (achieved, MFU)" >> $LOG
  grep -E -A3 "Achieved|MFU" $O/$n.steps.txt >> $LOG
  $V/python - $O/$n.steps.json >> $LOG 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("achieved:", json.dumps(d.get("achieved")), "\nmfu:", json.dumps(d.get("mfu")))
for k in (d.get("achieved_kernels") or [])[:8]:
    print("  ", k.get("precision"), k.get("tflops"), "TFLOP/s", (k.get("name") or "")[:90])
PY
}
capture nanogpt_shapes nsys 1
capture nanogpt_noshapes nsys 0
capture nanogpt_shapes2 nsys 1      # interleaved A B A: the machine's drift falls on both
report nanogpt_shapes
capture nanogpt_cupti cupti 1
report nanogpt_cupti
(cd $O && tar -cJf reports.tar.xz *.txt *.json 2>/dev/null)
(cd $R && tar -cJf $O/annotate_runs.tar.xz --exclude='*.sqlite' --exclude='*.nsys-rep' .)
cat $LOG
