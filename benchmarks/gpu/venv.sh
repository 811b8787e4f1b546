# Sourced by the GPU scripts that test what a user gets (capture_window.sh, hardware_truth.sh), from the repo
# root on the device machine with .whl carried, after setting S (the run's scratch folder) and LOG: step / t (timed run,
# its tail into the log) helpers, and a fresh venv at $S/venv with our wheel and its dependencies from .whl, the
# machine's own torch beside (a .pth), nvprof_wrap reinstalled from the newest wheel each time. Sets V (its bin/) and W
# (its nvprof-wrap).
step() { echo "=== $(date +%T) $*" >> $LOG; }
t() {  # t NAME CMD...: run, log wall time and exit code, then the tail (TAIL lines, default 25) of its output
  local name=$1; shift; local s=$EPOCHREALTIME
  "$@" > $R/$name.txt 2>&1; local rc=$?
  echo "wall $name $(awk "BEGIN{print $EPOCHREALTIME - $s}") rc $rc" >> $LOG; tail -${TAIL:-25} $R/$name.txt >> $LOG
}
V=$S/venv/bin; W=$V/nvprof-wrap
if [ ! -x $W ]; then
  python3 -m venv --without-pip $S/venv
  TORCH_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  VSITE=$($V/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$TORCH_SITE" > $VSITE/the-users-torch.pth
  python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile .whl/*.whl >> $LOG 2>&1
fi
python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile --force-reinstall .whl/nvprof_wrap-*.whl >> $LOG 2>&1
$V/python -c 'import ahocorasick' 2>/dev/null || echo "WARNING: no pyahocorasick in .whl (here first: bash \
../shared/device/prep.sh pyahocorasick): nvprof_wrap cannot be imported there" | tee -a $LOG >&2
nanogpt_copy() {  # karpathy/nanoGPT (unmodified, .gpu/nanogpt) at $S/nanogpt, with random shakespeare_char tokens
  rm -rf $S/nanogpt; cp -r $REPO/.gpu/nanogpt $S/nanogpt; mkdir -p $S/nanogpt/data/shakespeare_char
  $V/python -c "
import numpy as np, pickle
rng = np.random.default_rng(0)
for split, n in (('train', 1_000_000), ('val', 100_000)):
    rng.integers(0, 65, n, dtype=np.uint16).tofile(f'$S/nanogpt/data/shakespeare_char/{split}.bin')
pickle.dump({'vocab_size': 65}, open('$S/nanogpt/data/shakespeare_char/meta.pkl', 'wb'))"
}
