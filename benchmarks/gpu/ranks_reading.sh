#!/usr/bin/env bash
# Issue 29 on the GPU machine's host (16 cores): 256 generated rank captures reported serially, on a local process
# pool and on a dask.distributed LocalCluster, wall time and peak memory side by side; then the Dask path with
# 1..16 workers (does it scale?) and 2 cores (taskset) for the 2-core comparison. Every report must equal the first.
#   run: source .debs/gpu-env.sh; bash benchmarks/gpu/ranks_reading.sh      (carry .whl with the dask wheels and ours)
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log="$OUT/h200_ranks.log"
export PYTHONPATH="/tmp/site:$PWD"  # our wheel and dask from the carried wheels; benchmarks/ from the checkout
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; $(python3 -c 'import dask, distributed, nvprof_wrap; print("dask", dask.__version__, "nvprof-wrap", nvprof_wrap.__version__)')"
  python3 -m benchmarks.report_ranks generate /tmp/r256 --ranks 256 --kernels 2000
  echo "## 16 cores, 2 rounds: serial, local pool, Dask LocalCluster (16 workers)"
  python3 -m benchmarks.report_ranks bench /tmp/r256 --workers 16 --rounds 2 --save /tmp/r256.json
  echo "## the Dask path by workers (1 round each)"
  for w in 1 2 4 8; do
    echo "### $w workers"
    python3 -m benchmarks.report_ranks bench /tmp/r256 --workers "$w" --rounds 1 --modes dask --expect /tmp/r256.json
  done
  echo "## 2 cores (taskset -c 0,1): local pool and Dask, 2 workers"
  taskset -c 0,1 python3 -m benchmarks.report_ranks bench /tmp/r256 --workers 2 --rounds 1 --modes pool,dask --expect /tmp/r256.json
} 2>&1 | grep -v "distributed\.\|^  warnings.warn\|UserWarning" | tee "$log"
