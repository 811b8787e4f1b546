#!/usr/bin/env bash
# The Kineto reader's compiled loop (readers/_ckineto.c) on torch.profiler traces written on the GPU machine now, from
# our wheel built there (both compiled helpers) and installed into a fresh venv, run outside the checkout:
#   - workloads/gpt_train.py (bf16) and workloads/resnet_train.py (fp16, channels-last) with --torch-profiler (their
#     schedule: 3 active steps, record_shapes=True);
#   - a longer trace: a transformer encoder trained 150 steps under torch.profiler (record_shapes=True), exported
#     with export_chrome_trace, plain and gzipped.
# Each trace is reported as JSON with the compiled passes (default) and with NVPROF_WRAP_NATIVE=off (the Python and SQL
# paths), 3 rounds interleaved; the two JSON documents must be byte-identical (cmp), and the wall times are logged.
# Here first: bash ../shared/device/prep.sh pyahocorasick; move .whl/cupti_python-* and .whl/pyelftools-* aside (no cupti there).
# There, carrying .whl .debs:   source .debs/gpu-env.sh; python3 -m pip wheel -q --no-deps --no-build-isolation \
#   -w .whl .; bash benchmarks/gpu/kineto_native_check.sh        ($OUT/kineto_native.log)
set -u
REPO=$PWD
unset PYTHONPATH  # gpu-env.sh's /tmp/site holds our wheel too: nothing but the venv may provide nvprof_wrap
S=/tmp/kn; R=$S/runs; LOG=${OUT:-/tmp}/kineto_native.log
mkdir -p $R
export NO_COLOR=1 NVPROF_WRAP_HISTORY=off PYTHONUNBUFFERED=1
V=$S/venv/bin; W=$V/nvprof-wrap
python3 -m venv --without-pip $S/venv
TORCH_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
VSITE=$($V/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$TORCH_SITE" > $VSITE/the-users-torch.pth
python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile .whl/*.whl >> $LOG 2>&1
cd $S
$V/python -c "import nvprof_wrap.readers._kineto_rows as k, nvprof_wrap.timeline.native as n, torch; print('nvprof_wrap', k.__file__, 'compiled kineto loop:', k._ckineto is not None, 'compiled passes:', n.available(), 'torch', torch.__version__, torch.cuda.get_device_name())" >> $LOG 2>&1
echo "=== $(date +%T) traces" >> $LOG
$V/python $REPO/workloads/gpt_train.py --precision bf16 --steps 8 --torch-profiler $R/gpt > $R/gpt.txt 2>&1; echo "gpt rc $?" >> $LOG
$V/python $REPO/workloads/resnet_train.py --precision fp16 --channels-last --steps 8 --torch-profiler $R/resnet \
  > $R/resnet.txt 2>&1; echo "resnet rc $?" >> $LOG
mkdir -p $R/encoder
$V/python - $R/encoder/encoder.pt.trace.json >> $LOG 2>&1 <<'EOF'
import sys, torch
from torch.profiler import ProfilerActivity, profile
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
model = torch.nn.TransformerEncoder(layer, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), 1e-4)
x = torch.randn(16, 256, 512, device="cuda")
for _ in range(3):  # warm-up outside the trace
    with torch.autocast("cuda", dtype=torch.bfloat16):
        model(x).float().pow(2).mean().backward()
    opt.step(); opt.zero_grad()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for step in range(150):
        with torch.profiler.record_function(f"ProfilerStep#{step}"):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                model(x).float().pow(2).mean().backward()
            opt.step(); opt.zero_grad()
    torch.cuda.synchronize()
prof.export_chrome_trace(sys.argv[1])
print("encoder trace written")
EOF
gzip -k -6 $R/encoder/encoder.pt.trace.json; mkdir -p $R/encoder_gz; mv $R/encoder/encoder.pt.trace.json.gz $R/encoder_gz/
ls -la $R/gpt $R/resnet $R/encoder $R/encoder_gz >> $LOG 2>&1
echo "=== $(date +%T) compiled (default) vs NVPROF_WRAP_NATIVE=off, 3 rounds interleaved" >> $LOG
for name in gpt resnet encoder encoder_gz; do
  trace=$(ls $R/$name/*.json* | head -1)
  for rep in 1 2 3; do
    for mode in on off; do
      s=$EPOCHREALTIME
      NVPROF_WRAP_NATIVE=$mode $W report "$trace" --format json --store $S/store-$name-$mode-$rep.sqlite \
        > $S/$name-$mode.json 2> $S/$name-$mode.err; rc=$?
      echo "$name repeat $rep native=$mode rc $rc wall $(awk "BEGIN{print $EPOCHREALTIME - $s}")" >> $LOG
    done
    if cmp -s $S/$name-on.json $S/$name-off.json; then echo "$name repeat $rep: JSON identical" >> $LOG
    else echo "$name repeat $rep: JSON DIFFERS" >> $LOG; diff $S/$name-on.json $S/$name-off.json | head -20 >> $LOG; fi
  done
  $V/python -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], 'kernels', len(d['kernels']), 'launches', sum(k['launches'] for k in d['kernels']), 'ops', len(d.get('ops') or []), 'achieved', sorted((d.get('achieved') or {}).keys()), 'verdict:', str(d['verdict'])[:120])" $S/$name-on.json $name >> $LOG 2>&1
  cp $S/$name-on.json ${OUT:-/tmp}/kineto_native_$name.json 2>/dev/null
done
echo "=== $(date +%T) end" >> $LOG
