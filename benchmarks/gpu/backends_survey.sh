#!/usr/bin/env bash
# Every backend on an H200 (2026-11-29): launchers, crashes, experiments, overhead rounds, verify and DDP; the runs
# behind docs/backends.md, docs/results-h200.md, docs/accuracy.md and docs/performance.md.
# Runs on the device machine from the repo root, with .whl and .debs carried. Started in the background
# (setsid) so that it outlives one call; `bash benchmarks/gpu/backends_survey.sh wait SECONDS` waits for it and
# copies what is done to $OUT
# (runs.tgz in 15 MiB parts: `cat runs.tgz.part-* | tar xz`).
set -u
S=/tmp/nvw-session; R=$S/runs; LOG=$S/session.log
if [ "${1:-}" = wait ]; then
  end=$(( $(date +%s) + ${2:-500} ))
  while [ ! -f $S/done ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
  [ -f $S/done ] && echo "SESSION DONE" || echo "SESSION STILL RUNNING"
  tail -5 $LOG
  cp $LOG $OUT/ 2>/dev/null
  ( cd $S && find runs -name '*.nsys-rep' -size +30M -delete; tar czf $S/runs.tgz runs $(ls -d triton_ptx 2>/dev/null) && split -b 15M $S/runs.tgz $OUT/runs.tgz.part- )
  ls -la $OUT; exit 0
fi
source benchmarks/gpu/common.sh
mkdir -p $S/triton_ptx
export TRITON_CACHE_DIR=$S/triton_cache
NCU=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1); export NVPROF_WRAP_NCU=$NCU
step facts
{ nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader
  python3 -c "from cupti import cupti; print('cupti-python ok', cupti.get_timestamp())" 2>&1 | tail -1
  $NSYS --version; $NCU --version | tail -1
  python3 -c "import torch, keras; print('torch', torch.__version__, 'keras', keras.__version__, 'gpus', torch.cuda.device_count())"
  $W doctor --no-probe; } >> $LOG 2>&1

for b in nsys cupti; do
  step "launcher under $b"
  t gemm_$b $W run --backend $b -o $R/gemm_$b -- python3 workloads/matmul_probe.py
  t children_$b $W run --backend $b -o $R/children_$b -- python3 workloads/gemm_children.py
  t keras_fp16_$b $W run --backend $b --annotate keras,torch -o $R/keras_fp16_$b -- python3 workloads/reuters_mlp.py --precision fp16 --epochs 3
done
step crashes
t crash_exc_cupti $W run --backend cupti -o $R/crash_exc_cupti -- python3 workloads/crash_midway.py --how exception
t crash_kill_cupti $W run --backend cupti -o $R/crash_kill_cupti -- python3 workloads/crash_midway.py --how sigkill
t crash_exc_nsys $W run --backend nsys -o $R/crash_exc_nsys -- python3 workloads/crash_midway.py --how exception
step experiments
t exp_reuters $W experiment reuters_mlp --backend nsys --annotate keras --precisions fp32,fp16,mixed,bf16 -o $R/exp_reuters -- --epochs 20
t exp_reuters_json $W report $R/exp_reuters/fp16 --format json
t exp_convnet $W experiment convnet --backend nsys --precisions fp32,fp16,mixed -o $R/exp_convnet -- --epochs 3
step overhead
for rep in 1 2 3; do
  t ovh_none_mlp_$rep python3 workloads/reuters_mlp.py --precision fp32 --epochs 5
  t ovh_nsys_mlp_$rep $W run --backend nsys --no-report -o $R/ovh_nsys_mlp_$rep -- python3 workloads/reuters_mlp.py --precision fp32 --epochs 5
  t ovh_cupti_mlp_$rep $W run --backend cupti --no-report -o $R/ovh_cupti_mlp_$rep -- python3 workloads/reuters_mlp.py --precision fp32 --epochs 5
  t ovh_none_gemm_$rep python3 workloads/matmul_probe.py
  t ovh_nsys_gemm_$rep $W run --backend nsys --no-report -o $R/ovh_nsys_gemm_$rep -- python3 workloads/matmul_probe.py
  t ovh_cupti_gemm_$rep $W run --backend cupti --no-report -o $R/ovh_cupti_gemm_$rep -- python3 workloads/matmul_probe.py
done
step verify
t compile_run $W run --backend nsys -o $R/compile_run -- python3 workloads/compile_gemm.py
t verify_compile $W verify --runs $R -o $R/verify_compile -- python3 workloads/compile_gemm.py
for p in fp32 fp16 mixed; do
  t keras_run_$p $W run --backend nsys -o $R/keras_run_$p -- python3 workloads/reuters_mlp.py --precision $p --epochs 2
  t verify_keras_$p $W verify --runs $R -o $R/verify_keras_$p -- python3 workloads/reuters_mlp.py --precision $p --epochs 2
done
t verify_probe $W verify --runs $R -o $R/verify_probe -- python3 workloads/matmul_probe.py
find $TRITON_CACHE_DIR -name '*.ptx' -exec cp {} $S/triton_ptx/ \; 2>/dev/null
if [ "$(python3 -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
  step ddp
  for b in nsys cupti; do
    t ddp_$b $W run --backend $b -o $R/ddp_$b -- torchrun --nproc-per-node 2 workloads/ddp_reuters.py --precision mixed --epochs 3
  done
fi
step end
touch $S/done
