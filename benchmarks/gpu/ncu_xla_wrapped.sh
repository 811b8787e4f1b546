#!/usr/bin/env bash
# Nsight Compute's tensor-pipe counters on XLA's generated kernels of the seed's MLP on Keras's JAX backend (fp16 and
# mixed_float16, Keras 2 numerics): the `wrapped_*` kernels (single ops XLA's FusionWrapper puts in a kLoop fusion),
# `fusion_*` and `loop_*`/`input_*` fusions, each launch's matrix instructions net of
# HFMA2 (nvprof_wrap.classify.counters) — the evidence of rules.toml's xla-wrapped-op rule — then `verify` of the CSV
# against a run of the same job; then the same counters on single ops jitted alone (PROBE=1, the default), the
# evidence kept: on an H100 the seed's process segfaulted under ncu 2025.3.1 after some kernels every time (also
# without XLA's autotuner and command buffers), the probe did not. -k regex / -c keep JAX under ncu within a call.
# Here first: bash ../shared/device/prep.sh pyahocorasick; a wheel of HEAD in .whl.
# There, carrying .whl .debs:   source .debs/gpu-env.sh; bash benchmarks/gpu/ncu_xla_wrapped.sh
NAME=ncu_xla_wrapped S=${S:-/tmp/sncuw}
source benchmarks/gpu/ncu_jax.sh
SEED="$REPO/workloads/reuters_mlp.py --samples 2048 --verbose 0 --keras2-numerics all --epochs 2"
for p in ${PRECISIONS-fp16 mixed}; do  # PRECISIONS= : the probe alone
  step "ncu $p"
  (cd $S && TAIL=8 t ncu_$p timeout -s INT -k 10 240 $NCU --target-processes all --clock-control none --metrics $M \
     --force-overwrite --export $S/ncu_$p -k "regex:${KERNELS:-^(wrapped_|fusion|loop_|input_)}" -c ${COUNT:-80} \
     $V/python $SEED --precision $p)
  $NCU --import $S/ncu_$p.ncu-rep --csv > $O/ncu_$p.csv 2>> $LOG; wc -l $O/ncu_$p.csv >> $LOG
  [ "${VERIFY:-1}" = 1 ] || continue
  step "run $p (nsys) and verify"
  (cd $S && TAIL=5 t run_$p timeout -s INT -k 10 180 $W run --no-report -o $R/run_$p -- $V/python $SEED --precision $p)
  TAIL=60 t verify_$p timeout 120 $W verify --from $O/ncu_$p.csv $R/run_$p
done
if [ "${PROBE:-1}" = 1 ]; then  # single ops (benchmarks/gpu/xla_wrapped_ops.py): every wrapped_* kernel, fp16 and fp32
  step "ncu probe"
  (cd $S && TAIL=8 t ncu_probe timeout -s INT -k 10 240 $NCU --target-processes all --clock-control none --metrics $M \
     --force-overwrite --export $S/ncu_probe -k "regex:^wrapped_" -c 200 $V/python $REPO/benchmarks/gpu/xla_wrapped_ops.py)
  $NCU --import $S/ncu_probe.ncu-rep --csv > $O/ncu_probe.csv 2>> $LOG; wc -l $O/ncu_probe.csv >> $LOG
fi
cat $LOG
