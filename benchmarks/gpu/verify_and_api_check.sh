#!/usr/bin/env bash
# Issues 12, 13 and 15 on the GPU machine (run on 2026-11-30; its log: benchmarks/results/h200_final.log): on an H200, with .whl (+ ipython wheels) and .debs carried:
#   source .debs/gpu-env.sh; bash benchmarks/gpu/verify_and_api_check.sh        (results: $OUT/final.tgz, $OUT/session.log)
# 1. issue 12: `verify` on an fp32 transformer step of another shape than the labelled runs (out of sample):
#    counters against the final name rules;
# 2. issue 15: the Python API with the real CUPTI tracer (benchmarks/gpu/python_api_check.py);
# 3. issue 13: `nsys stats --format csv` of a real capture (the nsys stats CSV reader's real file).
set -u
source benchmarks/gpu/common.sh
NCU=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1); export NVPROF_WRAP_NCU=$NCU
T0=$(date +%s); BUDGET=${BUDGET:-420}
pack() {
  step end
  cd $S && find runs -name '*.ncu-rep' -delete; find runs -name 'ncu.csv' -exec gzip -9 {} \;
  find runs -name '*.sqlite' -size +3M -delete
  tar czf $OUT/final.tgz runs session.log; cp $LOG $OUT/; ls -la $OUT
}
trap pack EXIT
maybe() {
  local name=$1 max=$2; shift 2; local left=$(( BUDGET - ($(date +%s) - T0) ))
  if [ $left -lt 20 ]; then echo "skip $name: budget" >> $LOG; return; fi
  [ $max -gt $left ] && max=$left
  t $name timeout -k 5 $max "$@"
}
GPT="python3 workloads/gpt_train.py --precision fp32 --layers 4 --d-model 384 --heads 6 --block 128 --batch-size 8"
step "issue 15: the Python API on the GPU"
maybe api 150 python3 benchmarks/gpu/python_api_check.py $R/api
step "issue 13: nsys stats CSV of a real capture"
maybe gpt_nsys 90 $W run --backend nsys --no-report -o $R/gpt_nsys -- $GPT --steps 6
maybe stats 60 $NSYS stats --report cuda_gpu_kern_sum --format csv -o $R/gpt_stats/stats $R/gpt_nsys/nsys.sqlite
ls $R/gpt_stats >> $LOG 2>&1
step "issue 12: verify on an fp32 transformer step (out of sample)"
maybe verify 200 $W verify --runs $S/none --launch-count 450 -o $R/verify_gpt_fp32 -- $GPT --steps 1
$W report $R/verify_gpt_fp32/ncu.csv --format json > $R/verify_report.json 2>> $LOG
python3 - $R/verify_report.json >> $LOG 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ks = d["kernels"]
print("verify kernels", len(ks), "by counters", sum(k["evidence"] == "counters" for k in ks),
      "name unknown", sum(k["name_verdict"] == "unknown" for k in ks), "disagreements", len(d["disagreements"]))
for k in d["disagreements"]:
    print("  DISAGREE", k["name_verdict"], "->", k["tensor_core"], k["name"][:120])
PY
