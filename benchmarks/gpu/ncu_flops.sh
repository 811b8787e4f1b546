#!/usr/bin/env bash
# Nsight Compute's FLOP counters on the GPU machine (issue 41; classify/counter_flops.py): the metrics ncu offers for
# sm_90 (query.txt), and an export of benchmarks/gpu/ncu_flops.py's known-FLOP kernels with every tensor-path ops
# count by source type (sm__ops_path_tensor_src_*, the _sparsity_on halves left out), the SASS thread instructions
# of fp16/fp32/fp64 add, multiply and FMA, the matrix instruction counts verify collects, and each launch's duration
# (ncu_flops.csv, long format, as verify exports it). Run from the repository root:
#   benchmarks/gpu/ncu_flops.sh OUT_DIR
# On the H200 (ncu 2025.3.1, driver 580.159.04) this wrote tests/data/ncu_flops/ncu_flops.csv.
set -euo pipefail
out=${1:?OUT_DIR}
N=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
"$N" --version > "$out/ncu_version.txt"
"$N" --query-metrics --chip gh100 > "$out/query.txt" 2>&1
W=$(awk '{print $1}' "$out/query.txt" \
  | grep -E '^(sm__ops_path_tensor_src_[a-z0-9_]+|smsp__sass_thread_inst_executed_op_[dfh](fma|add|mul)_pred_on)$' \
  | grep -v sparsity_on | sed 's/$/.sum/' | paste -sd, -)
B=sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum
B=$B,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_imma.sum
B=$B,sm__inst_executed_pipe_tensor_op_dmma.sum,gpu__time_duration.sum
echo "$W,$B" > "$out/metrics.txt"
"$N" --target-processes all --clock-control none --metrics "$W,$B" --force-overwrite --export "$out/flops" \
  python3 benchmarks/gpu/ncu_flops.py > "$out/ncu_log.txt" 2>&1
"$N" --import "$out/flops.ncu-rep" --csv --print-units base > "$out/ncu_flops.csv"
