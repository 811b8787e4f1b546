#!/usr/bin/env bash
# Issue 41 test data on the H200: unmodified public training scripts that mark no steps themselves, each captured
# under `nvprof-wrap run --backend nsys` from our wheel in a fresh venv (the machine's own torch beside it), then
# reported (table, JSON, steady-state steps) and packed with its whole run folder.
#   timm_fp32 / timm_amp  timm's own train.py (huggingface/pytorch-image-models), ResNet-50, batch 128, one epoch of a
#                         synthetic ImageFolder (2 classes x 3200 random 224x224 JPEGs made there: the real decode /
#                         augment path, 8 workers), = 50 steps; fp32 (timm itself turns TF32 on) and
#                         --amp --amp-dtype bfloat16. Then `compare timm_fp32 timm_amp`.
#   lightning_bf16        Lightning's examples/pytorch/basics/transformer.py (the demos' Transformer LM, 14.6 M
#                         parameters, batch 20 x 35 tokens) with precision "bf16-mixed" and 100 steps given the way
#                         a user can without editing it: Trainer defaults from PL_TRAINER_PRECISION / _MAX_STEPS.
#                         Its WikiText2() skips the download when ./data/wikitext-2.txt exists: a synthetic one
#                         (33,278-word vocabulary, Zipf words) is written there first.
#   nanogpt_bf16          karpathy/nanoGPT train.py + config/train_shakespeare_char.py, --dtype=bfloat16
#                         --compile=False, 60 iterations, random shakespeare_char tokens; it prints MFU (A100 peak).
# Here first (from the repo root): bash ../shared/device/prep.sh pyahocorasick;
#   NVPROF_WRAP_NO_NATIVE=1 python3 -m pip wheel --no-deps --no-build-isolation -w .whl <a copy of HEAD>;
#   the unmodified public sources in .gpu/ (git-ignored): .gpu/timm/{train.py,timm/} (huggingface/pytorch-image-models),
#   .gpu/lightning/transformer.py (Lightning-AI/pytorch-lightning examples/pytorch/basics/transformer.py),
#   .gpu/nanogpt/{train,model,configurator}.py + config/train_shakespeare_char.py (karpathy/nanoGPT).
#   timm's deps (torchvision, pyyaml, huggingface_hub, safetensors) and lightning 2.6 are already on the machine.
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/precision_public_scripts.sh
# $OUT: capture41.log (this console; committed as benchmarks/results/precision_public_scripts/), reports.tar.xz (per run: the job's + run's console, report table, JSON of the
#   whole run and of the steady steps, --per-step table; the timm compare), and NAME.tar.xz per run: its run folder
#   (manifest, nsys.nsys-rep, nsys.sqlite, gpm.jsonl, run.sqlite); where that is over 16 MiB, without run.sqlite (the
#   reports' cache), and where still over, split into NAME.tar.xz.part-aa, -ab, ... of 15 MiB (cat them back together).
#   Measured on the H200: nsys records GPU metrics at 10 kHz there, so the .sqlite is ~6 MB a second of job (timm fp32:
#   315 MB, 19 MB as .tar.xz; its .nsys-rep 9.6 MB). Never xz -9e there: it ran past the call's 560 s on 315 MB.
# Knobs (defaults are the H200 run): RUNS (which of timm_fp32 timm_amp lightning_bf16 nanogpt_bf16), REPORTS=0 (no
#   reports there: make them from the returned .sqlite with the same wheel), QUICK=1 (no version check), BUDGET
#   (seconds for the whole script; a run that would not fit is skipped); for a CPU dry run of the flow: PER_CLASS,
#   TIMM_EXTRA, NANO_EXTRA, LT_TOKENS, LT_STEPS.
set -u
set -o pipefail
REPO=$PWD
unset PYTHONPATH   # gpu-env.sh's /tmp/site holds our wheel too: nothing but the venv may provide nvprof_wrap
S=${S:-/tmp/s41}; R=$S/runs; P=$S/rep; O=${OUT:-/tmp/out41}
BUDGET=${BUDGET:-530}; PER_CLASS=${PER_CLASS:-3200}; LT_TOKENS=${LT_TOKENS:-400000}; LT_STEPS=${LT_STEPS:-100}
TIMM_EXTRA=${TIMM_EXTRA:-}; NANO_EXTRA=${NANO_EXTRA:-}
RUNS=" ${RUNS:-timm_fp32 timm_amp lightning_bf16 nanogpt_bf16} "; REPORTS=${REPORTS:-1}; QUICK=${QUICK:-0}
mkdir -p $R $P $O
export NO_COLOR=1 COLUMNS=150 PYTHONUNBUFFERED=1 NVPROF_WRAP_NSYS=${NSYS:-} NVPROF_WRAP_HISTORY=$S/history.sqlite
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XZ_OPT='-T0 -6'
LIM=${LIM:-16777216}   # a returned file's limit

step() { echo; echo "=== $(date +%T) [+${SECONDS}s] $*"; }
bytes() { stat -c%s "$1" 2>/dev/null || echo 0; }
packreports() { tar -cJf $O/reports.tar.xz -C $S rep; }
pack() {  # pack NAME: $R/NAME as $O/NAME.tar.xz, whole; else without run.sqlite (the reports' cache, remade by any
          # report); else that split into parts of 15 MiB (each returned file <= 16 MiB)
  local n=$1 f=$O/$1.tar.xz
  (cd $R && tar -cJf $f $n)
  [ $(bytes $f) -gt $LIM ] && { echo "pack $n: $(bytes $f) B whole: without run.sqlite"; (cd $R && tar -cJf $f --exclude=run.sqlite $n); }
  if [ $(bytes $f) -gt $LIM ]; then
    echo "pack $n: $(bytes $f) B: split into 15 MiB parts"; split -b 15M $f $f.part-; rm -f $f; ls -la $f.part-*
  else
    echo "packed $n.tar.xz: $(bytes $f) B (limit $LIM)"; tar -tvJf $f
  fi
}
# capture NAME SECONDS_NEEDED A:B CMD...: run CMD under nsys in the current folder (SIGINT at the deadline), report
# it (table + JSON, whole and steps A..B-1 with --per-step), pack it, refresh reports.tar.xz
capture() {
  local n=$1 need=$2 steps=$3; shift 3
  case "$RUNS" in *" $n "*) ;; *) return ;; esac
  local left=$((BUDGET - SECONDS))
  if [ $left -lt $need ]; then step "SKIP $n: $left s left, it needs about $need"; return; fi
  local lim=$((left - 20 < need * 3 ? left - 20 : need * 3))   # 20 s kept for packing
  step "$n (limit ${lim}s): $*"
  local s=$EPOCHREALTIME
  local nr=; [ "$REPORTS" = 1 ] || nr=--no-report
  timeout -s INT -k 20 $lim $W run --backend nsys --gpu-metrics-frequency ${GPM_HZ:-1000} $nr -o $R/$n -- "$@" > $P/$n.run.txt 2>&1; local rc=$?
  echo "wall $n $(awk "BEGIN{print $EPOCHREALTIME - $s}") s, rc $rc"
  tr '\r' '\n' < $P/$n.run.txt | awk 'length($0) > 0 && !seen[$0]++' | cut -c1-400   # rich/tqdm redraws once
  du -sh $R/$n; ls -la $R/$n
  pack $n
  [ "$REPORTS" = 1 ] || return
  s=$EPOCHREALTIME
  $W report $R/$n --format json -o $P/$n.json 2>&1 | tail -3
  $W report $R/$n --steps $steps --format json -o $P/$n.steps.json 2>&1 | tail -3
  $W report $R/$n --steps $steps --per-step > $P/$n.steps.txt 2>&1
  echo "--- report --steps $steps --per-step ($n)"; cat $P/$n.steps.txt
  echo "reports of $n: $(awk "BEGIN{print $EPOCHREALTIME - $s}") s"
  packreports
}

main() {
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,memory.used --format=csv
  nproc; echo "NSYS=$NSYS"; $NSYS --version
  local V=$S/venv/bin; W=$V/nvprof-wrap
  if [ ! -x $W ]; then
    step venv
    python3 -m venv --without-pip $S/venv
    local TORCH_SITE VSITE
    TORCH_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    VSITE=$($V/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$TORCH_SITE" > $VSITE/the-users-torch.pth   # the user's environment: torch and friends, not our package
    python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
  fi
  [ "$QUICK" = 1 ] || (cd $S && $V/python -c "import nvprof_wrap, torch, torchvision, lightning; print('nvprof_wrap', nvprof_wrap.__version__, nvprof_wrap.__file__); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'torchvision', torchvision.__version__, 'lightning', lightning.__version__)")
  git -C $REPO log -1 --format='checkout HEAD %H' 2>/dev/null; ls -la $REPO/.whl/nvprof_wrap-*.whl

  step "data"
  rm -rf $S/timm $S/lightning $S/nanogpt $S/imgs
  cp -r $REPO/.gpu/timm $S/timm; cp -r $REPO/.gpu/lightning $S/lightning; cp -r $REPO/.gpu/nanogpt $S/nanogpt
  case "$RUNS" in *timm*) ;; *) PER_CLASS=0 ;; esac
  [ "$QUICK" = 1 ] || (cd $S/timm && $V/python -c "import timm, sys; print('timm', timm.__version__, 'from', timm.__file__)")
  [ $PER_CLASS -gt 0 ] && $V/python - $S/imgs $PER_CLASS <<'EOF'
import sys, os, time, numpy as np
from multiprocessing import Pool
from PIL import Image
root, per_class = sys.argv[1], int(sys.argv[2])
def make(args):  # a photo-like image: low-frequency colour fields plus grain, JPEG quality 90 (about 23 kB)
    c, i = args
    rng = np.random.default_rng(c * 1_000_003 + i)
    small = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(small).resize((224, 224), Image.BICUBIC), dtype=np.int16)
    img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
    Image.fromarray(img).save(f'{root}/train/class{c}/{i:05d}.jpg', quality=90)
t = time.time()
for c in range(2): os.makedirs(f'{root}/train/class{c}', exist_ok=True)
with Pool(min(16, os.cpu_count())) as p: p.map(make, [(c, i) for c in range(2) for i in range(per_class)], chunksize=64)
print(f'{2 * per_class} JPEGs in {root}/train in {time.time() - t:.1f} s')
EOF
  du -sh $S/imgs 2>/dev/null
  $V/python - $S/lightning/data/wikitext-2.txt $LT_TOKENS <<'EOF'
import sys, os, numpy as np
# WikiText-2's shape: its 33,278-word vocabulary (with '<eos>'), Zipf-distributed words, lines of 10-120 words
out, ntok = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
V = 33277
ids = np.concatenate([rng.permutation(V), (rng.zipf(1.2, ntok) - 1) % V])
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, 'w') as f:
    i = 0
    while i < len(ids):
        n = int(rng.integers(10, 120)); f.write(' ' + ' '.join(f'w{j}' for j in ids[i:i + n]) + ' \n'); i += n
print(out, len(ids), 'words')
EOF
  mkdir -p $S/nanogpt/data/shakespeare_char
  $V/python -c "
import numpy as np, pickle
rng = np.random.default_rng(0)  # the character-level set's shape (vocab 65); prepare.py would download the text
for split, n in (('train', 1_000_000), ('val', 100_000)):
    rng.integers(0, 65, n, dtype=np.uint16).tofile('$S/nanogpt/data/shakespeare_char/%s.bin' % split)
pickle.dump({'vocab_size': 65}, open('$S/nanogpt/data/shakespeare_char/meta.pkl', 'wb'))"

  # 50 steps an epoch (6400 / 128, the last partial batch dropped); steps 10..44 are the steady ones
  local TIMM="train.py --data-dir $S/imgs --val-split= --model resnet50 --num-classes 2 -b 128 --epochs 1 --workers 8 --log-interval 10 --seed 0"
  cd $S/timm
  capture timm_fp32 75 10:45 $V/python $TIMM --output $S/timm_out $TIMM_EXTRA
  capture timm_amp 70 10:45 $V/python $TIMM --amp --amp-dtype bfloat16 --output $S/timm_out $TIMM_EXTRA
  if [ "$REPORTS" = 1 ] && compgen -G "$R/timm_fp32/nsys*.sqlite" > /dev/null && compgen -G "$R/timm_amp/nsys*.sqlite" > /dev/null; then
    step "compare timm_fp32 timm_amp --steps 10:45"
    $W compare $R/timm_fp32 $R/timm_amp --steps 10:45 > $P/compare_timm.txt 2>&1; cat $P/compare_timm.txt
    $W compare $R/timm_fp32 $R/timm_amp --steps 10:45 --format json -o $P/compare_timm.json 2>&1 | tail -2
    packreports
  fi
  cd $S/lightning
  PL_TRAINER_PRECISION=bf16-mixed PL_TRAINER_MAX_STEPS=$LT_STEPS capture lightning_bf16 40 20:95 $V/python transformer.py
  cd $S/nanogpt
  capture nanogpt_bf16 45 10:55 $V/python train.py config/train_shakespeare_char.py --dtype=bfloat16 --compile=False \
    --max_iters=60 --eval_interval=1000 --eval_iters=2 --log_interval=10 $NANO_EXTRA
  step "cupti check (the launch path with our own tracer)"
  cd $S
  timeout -s INT -k 10 90 $W run --backend cupti -o $R/cupti_check -- $V/python $REPO/workloads/matmul_probe.py --dtypes fp32,bf16 --size 4096 --iters 10 > $P/cupti_check.txt 2>&1; echo "rc $?"
  tail -40 $P/cupti_check.txt
  $W report $R/cupti_check --format json -o $P/cupti_check.json 2>&1 | tail -2; packreports
  step "end"; nvidia-smi --query-gpu=clocks.sm,power.draw,memory.used --format=csv; ls -la $O
}
main 2>&1 | tee $O/capture41.log
