#!/usr/bin/env bash
# The report's own benchmarks (issue 48) on the GPU machine's 16 cores: the package from this checkout with its
# compiled helper built there, its dependencies from .whl in a fresh venv (the machine's Python beside it).
#   python -m benchmarks report_sections        every section vs none, 100k and 1M launches
#   python -m benchmarks report_long_job --quick  2M launches with NVTX and runtime records: attribution vs the
#                                               two-table floor, --per-step, HTML
#   python -m benchmarks report_kineto_json --quick  100k kernels, plain and gzipped, vs the ijson floor
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl.
# There, carrying .whl .debs:   source .debs/gpu-env.sh; bash benchmarks/gpu/report_suite.sh
# BENCHES=a,b --quick,...: which benchmarks (comma-separated). NOTE=... and taskset -c 0,1 in front: the same on two of its cores (a quiet 2-core machine).
# $OUT: report_suite.log and each benchmark's JSON (benchmarks/results format).
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH
NOTE=${NOTE:-"the GPU machine's 16 cores, nothing else running"}
S=${S:-/tmp/ssuite}; R=$S/runs; O=${OUT:-/tmp/outsuite}; LOG=$O/report_suite.log
mkdir -p $R $O; : > $LOG
source $REPO/benchmarks/gpu/venv.sh
(cd $REPO && python3 setup.py build_ext --inplace -q >> $LOG 2>&1; ls nvprof_wrap/timeline/_cattr*.so >> $LOG 2>&1)
(cd $REPO && $V/python -c "import nvprof_wrap.timeline.native as n; print('native helper:', n.available(), n.__file__)") >> $LOG 2>&1
IFS=, read -ra LIST <<< "${BENCHES:-report_sections,report_long_job --quick,report_kineto_json --quick}"
for b in "${LIST[@]}"; do
  step "python -m benchmarks $b"
  (cd $REPO && timeout -s INT 400 $V/python -m benchmarks $b --out $O --work-dir $S/work \
     --note "$NOTE" >> $LOG 2>&1); echo "rc $?" >> $LOG
done
cat $LOG
