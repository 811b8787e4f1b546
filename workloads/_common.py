"""Shared helpers for the nvprof-wrap workloads.

The workloads are standalone Keras 3 scripts: they run inside the user's (or
the GPU machine's) environment, so nothing here imports ``nvprof_wrap``.

Metrics file (JSON lines)
-------------------------
When the environment variable ``NVPROF_WRAP_METRICS`` names a file, a
workload appends one JSON object per line to it:

* first line: ``{"event": "start", "workload": ..., "precision": ...,
  "backend": keras.backend.backend(), "data": "reuters"|"synthetic",
  "epochs": ..., "batch_size": ..., "num_classes": ...}``
* one line per epoch: ``{"epoch": 1, "loss": ..., "accuracy": ...,
  "val_loss": ..., "val_accuracy": ..., "epoch_time_s": ..., "steps": ...}``
  (``epoch`` is 1-based; a metric Keras did not report is ``null``; with the
  ``mixed`` precision the current dynamic loss scale is added as
  ``loss_scale``)
* last line: ``{"event": "end", "wall_s": ...}``

JSON has no NaN or infinity, and a collapsed fp16 run produces exactly those,
so non-finite floats are written as the strings ``"nan"``, ``"inf"`` and
``"-inf"``.  Readers must map them back to floats.

Lines are flushed as they are written, so a run that crashes or is killed
still leaves its start line and every finished epoch behind.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any, TextIO

# Trim TensorFlow's C++ INFO chatter from the training log (absl's pre-init
# lines still show).  Warnings and errors are kept.  Must precede the TF import.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import keras as keras  # noqa: PLC0414 - re-exported: the Keras workloads import it from here, after the line above
import numpy as np

METRICS_ENV = "NVPROF_WRAP_METRICS"
PRECISIONS = ("fp32", "fp16", "mixed", "bf16")
KERAS2_NUMERICS = ("none", "optimizer", "loss", "all")


# --------------------------------------------------------------------------
# Command line and precision
# --------------------------------------------------------------------------


def base_parser(description: str, epochs: int, batch_size: int) -> argparse.ArgumentParser:
    """The flags every training workload shares."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp16 = keras.backend.set_floatx('float16') (everything "
                             "in half, as in the seed); mixed = mixed_float16 policy "
                             "with loss scaling; bf16 = mixed_bfloat16 policy")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--samples", type=int, default=None,
                        help="cap on the number of training samples (fast tests)")
    parser.add_argument("--seed", type=int, default=0, help="seed for data and weights")
    parser.add_argument("--keras2-numerics", choices=KERAS2_NUMERICS, default="none",
                        help="reproduce the seed's Keras 2.x formulas: its RMSprop "
                             "update ('optimizer'), its clipped cross-entropy ('loss') "
                             "or both ('all'); see docs/seed-collapse.md")
    parser.add_argument("--verbose", type=int, choices=(0, 1, 2), default=2,
                        help="Keras fit() verbosity: 2 = one line per epoch, "
                             "1 = progress bar")
    return parser


def setup_precision(precision: str) -> None:
    """Configure Keras' dtypes; must run before any layer is built."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    # fp16 is exactly the seed's call: set_floatx('float16') makes variables,
    # activations, optimizer state and the loss float16, with no loss scaling.
    keras.backend.set_floatx("float16" if precision == "fp16" else "float32")
    wanted = {"fp32": "float32", "fp16": "float16", "mixed": "mixed_float16",
              "bf16": "mixed_bfloat16"}[precision]
    # Keras' default policy follows floatx, so for fp32/fp16 this only acts
    # when an earlier call in the same process already fixed another policy.
    if keras.mixed_precision.global_policy().name != wanted:
        keras.mixed_precision.set_global_policy(wanted)


def make_optimizer(name: str, precision: str) -> keras.optimizers.Optimizer:
    """Build the optimizer, loss-scaled for mixed_float16.

    Keras 3's ``Model.compile`` wraps the optimizer in a LossScaleOptimizer by
    itself when the policy is mixed_float16 (``auto_scale_loss=True``); we wrap
    explicitly anyway so the behaviour does not depend on that default and
    is visible in the code.  compile() leaves an already-wrapped one alone.
    """
    optimizer = keras.optimizers.get(name)
    if precision == "mixed":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


class Keras2RMSprop(keras.optimizers.RMSprop):  # type: ignore[misc]  # keras ships no types: RMSprop is Any
    """RMSprop with Keras 2.x's update rule, for reproducing the seed.

    Keras 2 (keras/optimizers.py) did ``p - lr * g / (sqrt(a) + epsilon)``;
    Keras 3 does ``p - lr * g / sqrt(a + epsilon)``.  In float16 the
    accumulator ``a`` underflows to 0 for small gradients, and then the two
    differ enormously: Keras 2 divides by epsilon (1.19e-7 in fp16), Keras 3 by
    sqrt(epsilon) (3.45e-4).  Momentum/centered variants are not needed here.
    """

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:  # keras tensors and variables
        ops = keras.ops
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        velocity = self._velocities[self._get_variable_index(variable)]
        self.assign(velocity, ops.add(ops.multiply(self.rho, velocity),
                                      ops.multiply(1 - self.rho, ops.square(gradient))))
        # Same evaluation order as Keras 2: (lr * g) / (sqrt(a) + eps).
        denominator = ops.add(ops.sqrt(velocity), ops.cast(self.epsilon, variable.dtype))
        self.assign_sub(variable, ops.divide(ops.multiply(lr, gradient), denominator))


def keras2_categorical_crossentropy(y_true: Any, y_pred: Any) -> Any:
    """Keras 2's probability-space cross-entropy: clip(p, eps, 1 - eps), then log.

    Keras 3's TensorFlow backend instead recovers the softmax logits and uses
    a fused, stable op, which hides the fp16 clipping problem; this function
    keeps it visible on every backend.  In fp16, 1 - 1e-7 rounds to 1.0.
    """
    ops = keras.ops
    y_true = ops.cast(y_true, y_pred.dtype)
    y_pred = y_pred / ops.sum(y_pred, axis=-1, keepdims=True)
    eps = ops.cast(keras.backend.epsilon(), y_pred.dtype)
    y_pred = ops.clip(y_pred, eps, ops.cast(1.0, y_pred.dtype) - eps)
    return -ops.sum(y_true * ops.log(y_pred), axis=-1)


def make_loss_and_optimizer(keras2_numerics: str,
                            precision: str) -> tuple[Any, keras.optimizers.Optimizer]:
    """(loss, RMSprop optimizer) for a categorical classifier.

    ``keras2_numerics`` swaps in the Keras 2.x formulas one at a time, so the
    seed's collapse can be pinned on the optimizer, the loss, or both.
    """
    loss: Any = "categorical_crossentropy"
    if keras2_numerics in ("loss", "all"):
        loss = keras2_categorical_crossentropy
    if keras2_numerics in ("optimizer", "all"):
        optimizer: keras.optimizers.Optimizer = Keras2RMSprop()
        if precision == "mixed":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    else:
        optimizer = make_optimizer("rmsprop", precision)
    return loss, optimizer


def seed_everything(seed: int) -> None:
    keras.utils.set_random_seed(seed)


def softmax_output_layer(units: int) -> keras.layers.Layer:
    """The classifier head.

    Under mixed precision the softmax must run in float32 (the Keras mixed
    precision guide's advice); under pure fp16 we keep the seed's behaviour,
    where floatx is float16 and so is the softmax.
    """
    policy = keras.mixed_precision.global_policy().name
    dtype = "float32" if policy.startswith("mixed") else None
    return keras.layers.Dense(units, activation="softmax", dtype=dtype)


# --------------------------------------------------------------------------
# Metrics file
# --------------------------------------------------------------------------


def json_float(value: Any) -> Any:
    """A JSON-safe value: non-finite floats become "nan"/"inf"/"-inf"."""
    if value is None:
        return None
    try:
        number = float(np.asarray(value))
    except (TypeError, ValueError):
        return value
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


class MetricsFile:
    """Writes the JSON-lines metrics file, or nothing when the env var is unset."""

    def __init__(self, path: str | None) -> None:
        # Open for the whole run (closed in end()), so no context manager.
        self._stream: TextIO | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115
        self._t0 = time.perf_counter()

    @classmethod
    def from_env(cls) -> MetricsFile:
        return cls(os.environ.get(METRICS_ENV) or None)

    def write(self, record: dict[str, Any]) -> None:
        if self._stream is None:
            return
        clean = {key: json_float(val) if isinstance(val, float) or hasattr(val, "dtype")
                 else val for key, val in record.items()}
        self._stream.write(json.dumps(clean, allow_nan=False) + "\n")
        self._stream.flush()  # a crash must not lose finished epochs

    def start(self, **fields: Any) -> None:
        self.write({"event": "start", **fields})

    def end(self) -> None:
        self.write({"event": "end", "wall_s": round(time.perf_counter() - self._t0, 3)})
        if self._stream is not None:
            self._stream.close()
            self._stream = None


class EpochMetricsCallback(keras.callbacks.Callback):  # type: ignore[misc]  # keras ships no types: Callback is Any
    """Per-epoch metrics (and step counts) into a MetricsFile."""

    def __init__(self, sink: MetricsFile) -> None:
        super().__init__()
        self._sink = sink
        self._epoch_start = 0.0
        self._steps = 0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch_start = time.perf_counter()
        self._steps = 0

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._steps += 1

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs or {}
        record: dict[str, Any] = {"epoch": epoch + 1}
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            record[key] = json_float(logs.get(key))
        record["epoch_time_s"] = round(time.perf_counter() - self._epoch_start, 4)
        record["steps"] = self._steps
        scale = _loss_scale(self.model)
        if scale is not None:
            record["loss_scale"] = scale
        self._sink.write(record)


def _loss_scale(model: keras.Model | None) -> Any:
    optimizer = getattr(model, "optimizer", None)
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) and optimizer.built:
        return json_float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
    return None


# --------------------------------------------------------------------------
# Data: Reuters from the local Keras cache, else a synthetic stand-in
# --------------------------------------------------------------------------

REUTERS_WORDS = 10_000
REUTERS_CLASSES = 46
REUTERS_TRAIN = 8982
REUTERS_TEST = 2246
# sha256 Keras itself checks; a mismatch would make Keras re-download, and
# there is no network for that, so we only use a file that matches.
_REUTERS_SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"


def reuters_cache_path() -> Path | None:
    """The cached reuters.npz if it exists, without ever downloading it."""
    homes = [os.environ.get("KERAS_HOME"), os.path.expanduser("~/.keras"),
             "/tmp/.keras"]  # /tmp/.keras: Keras' fallback when ~ is read-only
    for home in homes:
        if home and (Path(home) / "datasets" / "reuters.npz").is_file():
            return Path(home) / "datasets" / "reuters.npz"
    return None


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def multi_hot(sequences: Any, dimension: int = REUTERS_WORDS) -> np.ndarray:
    """The book's vectorize_sequences: one row per document, 1.0 per word seen."""
    out = np.zeros((len(sequences), dimension), dtype="float32")
    for row, seq in enumerate(sequences):
        out[row, np.asarray(seq, dtype="int64")] = 1.0
    return out


def load_reuters_train(seed: int = 0, limit: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(x multi-hot, y integer labels, data kind, one-line description).

    ``limit`` caps the number of documents returned (the first ones).
    """
    n_docs = REUTERS_TRAIN if limit is None else min(limit, REUTERS_TRAIN)
    path = reuters_cache_path()
    if path is not None and _sha256(path) == _REUTERS_SHA256:
        # The file is cached and verified, so load_data will not download.
        (x_train, y_train), _ = keras.datasets.reuters.load_data(num_words=REUTERS_WORDS)
        x_train, y_train = x_train[:n_docs], np.asarray(y_train)[:n_docs]
        return multi_hot(x_train), y_train, "reuters", f"reuters ({path})"
    why = "Reuters not in the Keras cache" if path is None else \
        f"{path} does not match Keras' checksum"
    x, y = synthetic_reuters(n_docs, seed=seed)
    return x, y, "synthetic", f"synthetic ({why})"


def synthetic_reuters(n_docs: int, seed: int = 0, split: str = "train",
                      words: int = REUTERS_WORDS,
                      classes: int = REUTERS_CLASSES) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic bag-of-words set shaped like Reuters, with a learnable signal.

    Each class owns 40 indicative words; a document is ~10-150 background
    words drawn from a Zipf-like vocabulary plus a few of its class's words.
    Class frequencies are skewed like Reuters' (a few big topics).  The class
    vocabulary depends only on ``seed``; ``split`` picks an independent stream
    of documents so train and test never share rows.
    """
    vocab_rng = np.random.default_rng(seed)
    # Indices 0-2 are reserved in Reuters (padding/start/OOV); skip them.
    class_words = vocab_rng.choice(np.arange(3, words), size=(classes, 40), replace=False)
    prior = 1.0 / np.arange(1, classes + 1) ** 1.1
    prior = vocab_rng.permutation(prior / prior.sum())
    background = 1.0 / np.arange(1, words - 3 + 1)  # Zipf: frequent words first
    background /= background.sum()

    doc_rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    prior_cdf, background_cdf = np.cumsum(prior), np.cumsum(background)
    labels = np.empty(n_docs, dtype="int64")
    x = np.zeros((n_docs, words), dtype="float32")
    x[:, 1] = 1.0  # every Reuters sequence starts with the start token
    # One document at a time from one stream, so the first n documents are
    # the same whatever n_docs is (--samples only truncates the set).
    for row in range(n_docs):
        label = min(int(np.searchsorted(prior_cdf, doc_rng.random())), classes - 1)
        labels[row] = label
        length = int(doc_rng.integers(10, 150))
        drawn = np.searchsorted(background_cdf, doc_rng.random(length))
        x[row, 3 + np.minimum(drawn, words - 4)] = 1.0
        n_class_words = int(doc_rng.integers(2, 8))
        x[row, doc_rng.choice(class_words[label], size=n_class_words, replace=False)] = 1.0
    return x, labels


def synthetic_images(n: int, classes: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Channels-last images: a per-class smooth template plus noise (learnable)."""
    rng = np.random.default_rng(seed)
    coarse = rng.normal(size=(classes, size // 4, size // 4, 3)).astype("float32")
    templates = coarse.repeat(4, axis=1).repeat(4, axis=2)  # blocky = conv-friendly
    labels = rng.integers(0, classes, size=n)
    noise = rng.normal(scale=1.0, size=(n, size, size, 3)).astype("float32")
    # Faint templates under unit noise: learnable, but not in a single step.
    return 0.15 * templates[labels] + noise, labels.astype("int64")
