#!/usr/bin/env bash
# Issue 25, first look on the GPU machine: what NVML GPM and nsys GPU metrics say for phases of known truth
# (benchmarks/gpu/hardware_phases.py), whether they run together, and the clocks to map them to the kernels.
# There, carrying .whl .debs:  source .debs/gpu-env.sh; bash benchmarks/gpu/hardware_metrics_explore.sh
# $OUT: explore.log, gpm_ref.jsonl (unprofiled), phases_nsys.sqlite.gz (GPU metrics 10 kHz, pruned to the SM and
# tensor metrics), gpm_nsys.jsonl (GPM beside nsys), cupti run folder's capture + gpm (tar.gz).
set -u
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
LOG=$OUT/explore.log; W=/tmp/hw; mkdir -p $W
say() { echo "=== $(date +%T) $*" >> $LOG; }
say nsys; $NSYS --version >> $LOG 2>&1
$NSYS profile --gpu-metrics-devices=help >> $LOG 2>&1
$NSYS profile --gpu-metrics-set=help >> $LOG 2>&1
python3 -c "import pynvml; print('pynvml', pynvml.__file__)" >> $LOG 2>&1
python3 -c "from nvprof_wrap.launch import gpm; print('gpm available:', gpm.available())" >> $LOG 2>&1
say reference; python3 -m nvprof_wrap.launch.gpm $OUT/gpm_ref.jsonl --interval 0.1 2>> $LOG & G=$!
sleep 0.5; python3 benchmarks/gpu/hardware_phases.py >> $LOG 2>&1; sleep 0.3; kill -TERM $G; wait $G
say nsys with gpu metrics, GPM beside it
python3 -m nvprof_wrap.launch.gpm $OUT/gpm_nsys.jsonl --interval 0.1 2>> $LOG & G=$!
$NSYS profile -t cuda,nvtx --gpu-metrics-devices=0 --gpu-metrics-frequency=10000 -o $W/ph --force-overwrite true \
  python3 benchmarks/gpu/hardware_phases.py >> $LOG 2>&1
kill -TERM $G; wait $G
$NSYS export -t sqlite -o $W/ph.sqlite --force-overwrite true $W/ph.nsys-rep >> $LOG 2>&1
python3 - $W/ph.sqlite >> $LOG 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("metrics:", c.execute("SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS").fetchall())
print("GPU_METRICS cols:", [r[1] for r in c.execute("PRAGMA table_info(GPU_METRICS)")])
print("rows:", c.execute("SELECT COUNT(*), MIN(timestamp), MAX(timestamp) FROM GPU_METRICS").fetchone())
print("session start:", c.execute("SELECT * FROM TARGET_INFO_SESSION_START_TIME").fetchall())
keep = [r[0] for r in c.execute("SELECT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'SM%Active%' "
        "OR metricName LIKE '%Tensor%' OR metricName LIKE 'SMs Active%' OR metricName LIKE 'GR Active%'")]
print("keep", keep)
c.execute(f"DELETE FROM GPU_METRICS WHERE metricId NOT IN ({','.join(map(str, keep))})")
c.commit(); c.execute("VACUUM"); c.close()
PY
ls -la $W >> $LOG; gzip -c $W/ph.sqlite > $OUT/phases_nsys.sqlite.gz
say cupti with GPM beside it
python3 -m nvprof_wrap.launch.gpm $W/gpm_cupti.jsonl --interval 0.1 2>> $LOG & G=$!
python3 -m nvprof_wrap run --backend cupti --no-report -o $W/cupti -- python3 benchmarks/gpu/hardware_phases.py >> $LOG 2>&1
kill -TERM $G; wait $G
ls -la $W/cupti >> $LOG
tar czf $OUT/cupti_run.tar.gz -C $W cupti gpm_cupti.jsonl
python3 -m nvprof_wrap report $W/cupti >> $LOG 2>&1
python3 -m nvprof_wrap report $W/ph.sqlite >> $LOG 2>&1
say done
