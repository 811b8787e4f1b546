#!/usr/bin/env bash
# GPU session 1 on an H200 machine (device tool): the launcher's real runs (issue 3), the precision
# experiments (issue 4), per-op attribution (issue 5) and backend overhead (issue 8), in one call.
# Run from the repo root with .whl and .debs carried:  bash benchmarks/h200_session1.sh
set -u
source .debs/gpu-env.sh
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERAS_BACKEND=torch NO_COLOR=1 COLUMNS=150 NVPROF_WRAP_NSYS=$NSYS
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/runs; mkdir -p "$R"; LOG=$OUT/session.log
W() { python3 -m nvprof_wrap "$@"; }
step() { echo; echo "=== $(date +%T) $*" | tee -a "$LOG"; }
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "wall $(echo "$(date +%s.%N) - $s" | bc) rc $rc :: $*" | tee -a "$LOG"; return $rc; }

step facts
nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader | tee -a "$LOG"
python3 -c "from cupti import cupti; print('cupti-python ok, timestamp', cupti.get_timestamp())" 2>&1 | tail -1 | tee -a "$LOG"
$NSYS --version 2>&1 | tee -a "$LOG"
python3 -c "import torch, keras; print('torch', torch.__version__, 'keras', keras.__version__)" | tee -a "$LOG"
W doctor --no-probe 2>&1 | tee -a "$LOG"

for b in nsys cupti; do
  step "GEMM probe under $b"
  t timeout 240 python3 -m nvprof_wrap run --backend $b -o $R/gemm_$b -- python3 workloads/matmul_probe.py > $R/gemm_$b.txt 2>&1
  tail -40 $R/gemm_$b.txt
  step "parent with GPU children under $b"
  t timeout 240 python3 -m nvprof_wrap run --backend $b -o $R/children_$b -- python3 workloads/gemm_children.py > $R/children_$b.txt 2>&1
  head -30 $R/children_$b.txt | tail -25
  step "Keras reuters fp16, annotated, under $b"
  t timeout 300 python3 -m nvprof_wrap run --backend $b --annotate keras,torch -o $R/keras_fp16_$b -- python3 workloads/reuters_mlp.py --precision fp16 --epochs 3 > $R/keras_fp16_$b.txt 2>&1
  grep -A40 "Tensor cores used" $R/keras_fp16_$b.txt | head -60
done

step "crashes"
t timeout 120 python3 -m nvprof_wrap run --backend cupti -o $R/crash_exc_cupti --no-report -- python3 workloads/crash_midway.py --how exception > $R/crash_exc_cupti.txt 2>&1
t timeout 120 python3 -m nvprof_wrap run --backend cupti -o $R/crash_kill_cupti --no-report -- python3 workloads/crash_midway.py --how sigkill > $R/crash_kill_cupti.txt 2>&1
t timeout 120 python3 -m nvprof_wrap run --backend nsys -o $R/crash_exc_nsys --no-report -- python3 workloads/crash_midway.py --how exception > $R/crash_exc_nsys.txt 2>&1
for d in crash_exc_cupti crash_kill_cupti crash_exc_nsys; do W report $R/$d --limit 3 2>&1 | head -3; ls $R/$d; done

step "experiment: reuters_mlp, the seed's config (20 epochs, batch 512)"
t timeout 600 python3 -m nvprof_wrap experiment reuters_mlp --backend nsys --precisions fp32,fp16,mixed,bf16 -o $R/exp_reuters -- --epochs 20 2>&1 | tail -30 | tee $R/exp_reuters.txt
W experiment reuters_mlp --format json --precisions fp32 -o $R/exp_dummy -- --epochs 1 >/dev/null 2>&1 || true
step "experiment: convnet"
t timeout 400 python3 -m nvprof_wrap experiment convnet --backend nsys --precisions fp32,fp16,mixed -o $R/exp_convnet -- --epochs 3 2>&1 | tail -20 | tee $R/exp_convnet.txt

step "overhead, side by side (unprofiled, nsys, cupti), reuters fp32 5 epochs and the GEMM probe"
for rep in 1 2; do
  for b in none nsys cupti; do
    if [ $b = none ]; then
      t python3 workloads/reuters_mlp.py --precision fp32 --epochs 5 > /dev/null 2>&1
      t python3 workloads/matmul_probe.py > /dev/null 2>&1
    else
      t python3 -m nvprof_wrap run --backend $b --no-report -o $R/ovh_${b}_$rep -- python3 workloads/reuters_mlp.py --precision fp32 --epochs 5 > /dev/null 2>&1
      t python3 -m nvprof_wrap run --backend $b --no-report -o $R/ovhg_${b}_$rep -- python3 workloads/matmul_probe.py > /dev/null 2>&1
    fi
  done
done
grep '^wall' "$LOG" > $OUT/walls.txt

step pack
find $R -name '*.nsys-rep' -delete
find $R -name '*.qdstrm' -delete
du -sh $R; ls -la $R
tar czf $OUT/runs.tgz -C $OUT runs
ls -la $OUT
