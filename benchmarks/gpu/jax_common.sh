# Sourced by benchmarks/gpu/jax_captures.sh and jax_verify.sh on the GPU machine (repo root, .whl and .gpu carried),
# after setting S (the scratch folder) and REPO:
#   jax_venv     a fresh venv at $S/venv with our wheel and its dependencies from .whl, the machine's own site (jax,
#                torch) beside it through a .pth; sets V (its bin/) and W (its nvprof-wrap)
#   jax_mnist    jax's examples (.gpu/jax/examples, unmodified) at $S/jax/examples, and MNIST's four idx files of
#                synthetic images at /tmp/jax_example_data, where examples/datasets.py looks before downloading (the
#                machine has no network): ten noisy prototypes, MNIST's shapes and format
jax_venv() {
  V=$S/venv/bin; W=$V/nvprof-wrap
  if [ ! -x $W ]; then
    python3 -m venv --without-pip $S/venv
    local SITE VSITE
    SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    VSITE=$($V/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$SITE" > $VSITE/the-users-site.pth   # the user's environment: jax, torch; not our package
    python3 -m pip --python $V/python install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
  fi
  (cd $S && KERAS_BACKEND=jax $V/python -c "import nvprof_wrap, jax, keras; print('nvprof_wrap', nvprof_wrap.__file__); print('jax', jax.__version__, 'keras', keras.__version__, jax.devices())")
}

jax_mnist() {
  mkdir -p $S/jax; cp -r $REPO/.gpu/jax/examples $S/jax/
  $V/python - <<'PY'
import gzip, os, struct, numpy as np
d = "/tmp/jax_example_data"; os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
protos = rng.integers(0, 256, (10, 28, 28)).astype(np.uint8)
for split, n in (("train", 60000), ("t10k", 10000)):
    lab = rng.integers(0, 10, n).astype(np.uint8)
    img = np.clip(protos[lab].astype(int) + rng.integers(-60, 60, (n, 28, 28)), 0, 255).astype(np.uint8)
    with gzip.open(f"{d}/{split}-images-idx3-ubyte.gz", "wb", compresslevel=1) as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28)); f.write(img.tobytes())
    with gzip.open(f"{d}/{split}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 2049, n)); f.write(lab.tobytes())
print("synthetic MNIST in", d)
PY
}
