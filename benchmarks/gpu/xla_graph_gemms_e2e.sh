#!/usr/bin/env bash
# XLA's cuBLAS GEMMs inside CUDA graphs, end to end as a user gets them, on the GPU machine from our wheel in a fresh
# venv: jax's MNIST example (unmodified, --xla_gpu_enable_triton_gemm=false) under `nvprof-wrap run --backend nsys`
# with no dump flag of the user's (run's own RUN/xla-dump), as XLA runs it (its step a CUDA graph); `report` of the
# run folder (table and JSON into $OUT); then the report's time with the graph-node pass and without it
# (readers/_xla_graphs.nodes stubbed out), three interleaved rounds, each a fresh process.
# Here first: as benchmarks/gpu/xla_graph_gemms.sh says (wheel, .debs, .gpu/jax/examples).
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/xla_graph_gemms_e2e.sh
set -u
export RUNS=" " S=/tmp/sgg REPO=$PWD
bash benchmarks/gpu/xla_graph_gemms.sh > /dev/null 2>&1   # the venv and nothing else (RUNS empty)
source benchmarks/gpu/jax_common.sh; V=$S/venv/bin; W=$V/nvprof-wrap; jax_mnist
export NO_COLOR=1 COLUMNS=150 NVPROF_WRAP_NSYS=$NSYS NVPROF_WRAP_HISTORY=off XLA_PYTHON_CLIENT_PREALLOCATE=false
cd $S/jax && XLA_FLAGS=--xla_gpu_enable_triton_gemm=false timeout 200 $W run --backend nsys -o $S/e2e -- $V/python -m examples.mnist_classifier > $S/e2e.run.txt 2>&1; echo "run rc $?"
tail -3 $S/e2e.run.txt; ls $S/e2e; ls $S/e2e/xla-dump | head -3; ls $S/e2e/xla-dump | wc -l
$W report $S/e2e > $OUT/e2e.report.txt 2>&1; echo "report rc $?"; grep -A3 "Achieved\|MFU" $OUT/e2e.report.txt | head -12
$W report $S/e2e --format json -o $OUT/e2e.json > /dev/null 2>&1
cat > $S/t.py <<'PY'
import sys, time, tempfile, os
import nvprof_wrap
from nvprof_wrap.readers import _xla_graphs
if sys.argv[2] == "off":
    _xla_graphs.nodes = lambda *a, **k: ()
with tempfile.TemporaryDirectory() as d:
    t = time.perf_counter(); r = nvprof_wrap.analyze(sys.argv[1], store=os.path.join(d, "s.sqlite"), xla_dump=[sys.argv[3]])
    print(sys.argv[2], round(time.perf_counter() - t, 3), {p: round(a.coverage, 4) for p, a in r.achieved.items()}, r.mfu)
PY
for i in 1 2 3; do for m in off on; do $V/python $S/t.py $S/e2e/nsys.sqlite $m $S/e2e/xla-dump; done; done 2>&1 | tee $OUT/e2e.timing.txt
