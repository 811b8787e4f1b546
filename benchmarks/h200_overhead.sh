#!/usr/bin/env bash
# The second GPU session (2026-11-29, session 2): backend overhead side by side, the cupti backend's per-op
# attribution, and `doctor` with its probe. Runs on the device machine from the repo root with .whl and .debs
# carried; start it with `setsid nohup bash benchmarks/h200_overhead.sh > /dev/null 2>&1 &`, then
# `bash benchmarks/h200_session.sh wait SECONDS` (same folder layout) copies what is done to $OUT.
set -u
source benchmarks/h200_common.sh
step facts
{ nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader
  python3 -c "import torch, keras; print('torch', torch.__version__, 'keras', keras.__version__)"; } >> $LOG 2>&1
# VARIANTS="none cupti" (default: all four) picks the overhead variants; DOCTOR=0 skips doctor.
[ "${DOCTOR:-1}" = 1 ] && { step doctor; t doctor $W doctor; }
step "per-op attribution under cupti"
t keras_fp16_cupti_ops $W run --backend cupti --annotate keras,torch -o $R/keras_fp16_cupti_ops -- python3 workloads/reuters_mlp.py --precision fp16 --epochs 3
t keras_fp16_cupti_ops_json $W report $R/keras_fp16_cupti_ops --format json
python3 - $R/keras_fp16_cupti_ops >> $LOG 2>&1 <<'PY'
import glob, sqlite3, sys
for f in sorted(glob.glob(sys.argv[1] + "/cupti-*.sqlite")):
    c = sqlite3.connect(f)
    n = {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("kernel", "runtime", "driver", "nvtx")
         if c.execute("SELECT 1 FROM sqlite_master WHERE name=?", (t,)).fetchone()}
    linked = c.execute("""SELECT count(*) FROM kernel WHERE correlation_id IN (SELECT correlation_id FROM runtime
                          UNION ALL SELECT correlation_id FROM driver)""").fetchone()[0]
    print("records", f.rsplit("/", 1)[-1], n, "kernels linked to a launch call:", linked,
          dict(c.execute("SELECT key, value FROM meta WHERE key IN ('api_records', 'kinds')")))
PY
[[ " ${VARIANTS:-nsys} " == *" nsys "* ]] && t keras_fp16_nsys_ops $W run --backend nsys --annotate keras,torch -o $R/keras_fp16_nsys_ops -- python3 workloads/reuters_mlp.py --precision fp16 --epochs 3
step overhead
# One variant per line; each round runs them all, in an order rotated by the round so drift is not one variant's.
read -r -a VARIANTS <<< "${VARIANTS:-none nsys cupti cupti_noruntime}"; NV=${#VARIANTS[@]}
job() {  # job VARIANT NAME CMD...
  local v=$1 name=$2; shift 2
  case $v in
    none) t $name "$@" ;;
    nsys) t $name $W run --backend nsys --no-report -o $R/$name -- "$@" ;;
    cupti) t $name $W run --backend cupti --no-report -o $R/$name -- "$@" ;;
    cupti_noruntime) t $name env NVPROF_WRAP_CUPTI_RUNTIME=0 $W run --backend cupti --no-report -o $R/$name -- "$@" ;;
  esac
}
for rep in 1 2 3; do
  for (( i = 0; i < NV; i++ )); do
    v=${VARIANTS[$(( (i + rep) % NV ))]}
    job $v ovh_${v}_mlp_$rep python3 workloads/reuters_mlp.py --precision fp16 --epochs 5
    job $v ovh_${v}_gemm_$rep python3 workloads/matmul_probe.py
  done
done
step end
find $R -name '*.nsys-rep' -delete
find $R -path '*/ovh_*_[23]/*' -name '*.sqlite*' -delete  # rounds 2-3: manifests and logs are enough
touch $S/done
