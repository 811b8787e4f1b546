#!/usr/bin/env bash
# Issues 13, 15 and 17 on the GPU machine (run on 2026-11-30; its log: benchmarks/results/h200_overhead_raw.log),
# one device command (.whl and .debs carried):
#   source .debs/gpu-env.sh; bash benchmarks/gpu/stats_records_overhead.sh
# 1. `nsys stats --format csv` of a real capture (issue 13's nsys stats CSV reader);
# 2. API records of an in-process profiling window, three ways (issue 15: per-op tables from profile());
# 3. the tracer's overhead run (issue 17, benchmarks/gpu/backend_overhead.sh) in what is left of the budget.
set -u
source benchmarks/gpu/common.sh
mkdir -p $R/gpt_stats
GPT="python3 workloads/gpt_train.py --precision fp32 --layers 4 --d-model 384 --heads 6 --block 128 --batch-size 8"
step "nsys stats CSV"
t gpt_nsys timeout 90 $W run --backend nsys --no-report -o $R/gpt_nsys -- $GPT --steps 6
t stats timeout 60 $NSYS stats --report cuda_gpu_kern_sum --report cuda_gpu_mem_time_sum --format csv -o $R/gpt_stats/stats $R/gpt_nsys/nsys.sqlite
step "API records of an in-process window"
t api_records timeout 200 python3 benchmarks/gpu/window_api_records.py $R/api_records
( cd $R && tar czf $OUT/a.tgz gpt_stats stats.txt gpt_nsys.txt api_records.txt $(find api_records -name '*.sqlite') )
BUDGET_S=${BUDGET_S:-390} bash benchmarks/gpu/backend_overhead.sh
