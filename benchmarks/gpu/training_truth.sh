#!/usr/bin/env bash
# Run on 2026-11-30 (issues 12, 13, 16, 17; its log: benchmarks/results/h200_truth.log): real training workloads on an H200, labelled by Nsight Compute
# matrix-instruction counters (`nvprof-wrap verify`), plus Nsight Systems captures of the same GPT trainer in fp32
# and bf16, a torch.profiler trace and a JAX XSpace trace. Run on the device machine from the repo root with
# .whl and .debs carried:  bash benchmarks/gpu/training_truth.sh   (results: $OUT/truth.tgz*, `cat truth.tgz* | tar xz`)
# Steps run in priority order inside a time budget ($BUDGET seconds, default 530); a step that would not fit is
# skipped and logged, and whatever finished is packed on exit.
set -u
source benchmarks/gpu/common.sh
NCU=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1); export NVPROF_WRAP_NCU=$NCU
T0=$(date +%s); BUDGET=${BUDGET:-530}
pack() {
  step end
  cd $S && find runs -name '*.ncu-rep' -delete; find runs -name '*.nsys-rep' -delete
  find runs -name 'ncu.csv' -exec gzip -9 {} \;
  tar czf $S/truth.tgz runs session.log && split -b 15M $S/truth.tgz $OUT/truth.tgz.part-
  cp $LOG $OUT/; ls -la $OUT
}
trap pack EXIT
maybe() {  # maybe NAME MAX_SECONDS CMD...: run within what is left of the budget, else log a skip
  local name=$1 max=$2; shift 2; local left=$(( BUDGET - ($(date +%s) - T0) ))
  if [ $left -lt 25 ]; then echo "skip $name: budget" >> $LOG; return; fi
  [ $max -gt $left ] && max=$left
  t $name timeout -k 5 $max "$@"
}
V="$W verify --runs $S/no-earlier-runs --launch-count 2500 --format json"
step facts
{ nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader; $NCU --version | tail -1
  $NSYS --version; python3 -c "import torch, jax; print('torch', torch.__version__, 'jax', jax.__version__, jax.devices())"
  $NCU --help | grep -A6 -- '--kernel-id' | head -8; } >> $LOG 2>&1
step "nsys captures of the GPT trainer (issue 16 compare, issue 12 unknown share)"
maybe gpt_fp32_nsys 90 $W run --backend nsys -o $R/gpt_fp32_nsys -- python3 workloads/gpt_train.py --precision fp32 --steps 30
maybe gpt_bf16_nsys 90 $W run --backend nsys -o $R/gpt_bf16_nsys -- python3 workloads/gpt_train.py --precision bf16 --steps 30 --fused-adam
step "counter truth (issue 12)"
maybe v_gpt_fp32 120 $V -o $R/v_gpt_fp32 -- python3 workloads/gpt_train.py --precision fp32 --steps 2
maybe v_gpt_bf16 100 $V -o $R/v_gpt_bf16 -- python3 workloads/gpt_train.py --precision bf16 --steps 2 --fused-adam
maybe v_resnet_fp32 120 $V -o $R/v_resnet_fp32 -- python3 workloads/resnet_train.py --precision fp32 --steps 2
maybe v_lstm_fp32 60 $V -o $R/v_lstm_fp32 -- python3 workloads/lstm_lm.py --precision fp32 --steps 2
step "traces of other formats (issues 13, 17)"
maybe jax_trace 60 python3 workloads/jax_mlp.py --precision bf16 --steps 25 --trace-dir $R/jax_trace
maybe kineto_gpt 60 python3 workloads/gpt_train.py --precision bf16 --steps 6 --torch-profiler $R/kineto_gpt
step "more counter truth"
maybe v_gpt_fp16 100 $V -o $R/v_gpt_fp16 -- python3 workloads/gpt_train.py --precision fp16 --steps 2
maybe v_resnet_fp16cl 120 $V -o $R/v_resnet_fp16cl -- python3 workloads/resnet_train.py --precision fp16 --channels-last --steps 2
maybe v_lstm_fp16 60 $V -o $R/v_lstm_fp16 -- python3 workloads/lstm_lm.py --precision fp16 --steps 2
maybe v_gpt_fp32_compile 150 $V -o $R/v_gpt_fp32_compile -- python3 workloads/gpt_train.py --precision fp32 --steps 2 --compile
maybe v_keras_fp16 60 $V -o $R/v_keras_fp16 -- python3 workloads/reuters_mlp.py --precision fp16 --epochs 1
maybe v_probe 60 $V -o $R/v_probe -- python3 workloads/matmul_probe.py
