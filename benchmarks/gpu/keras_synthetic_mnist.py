"""Run a Keras script as it is, with keras.datasets.mnist.load_data giving synthetic MNIST: the GPU machine has no
network, and Keras checks the file's hash before it reads a cached mnist.npz. Ten noisy prototypes with MNIST's
shapes and dtypes (as benchmarks/gpu/jax_common.sh writes for jax's examples).

    python keras_synthetic_mnist.py [--policy mixed_bfloat16] SCRIPT [ARGS...]

--policy sets Keras's global dtype policy first (the script itself unchanged).
"""
from __future__ import annotations

import runpy
import sys

import keras
import numpy as np


def synthetic() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    protos = rng.integers(0, 256, (10, 28, 28))

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = np.clip(protos[labels] + rng.integers(-60, 60, (n, 28, 28)), 0, 255).astype(np.uint8)
        return images, labels

    return split(60000), split(10000)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--policy"]:
        keras.config.set_dtype_policy(argv[1])
        argv = argv[2:]
    keras.datasets.mnist.load_data = synthetic
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
