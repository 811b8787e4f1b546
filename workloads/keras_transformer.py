"""A small GPT-style Keras 3 language model on synthetic tokens (a transformer step on any Keras backend).

Token + position embedding -> N blocks of (LayerNorm, causal MultiHeadAttention, LayerNorm, Dense 4x GELU, Dense)
-> LayerNorm -> Dense vocabulary logits; AdamW, sparse categorical cross-entropy.

    KERAS_BACKEND=jax python workloads/keras_transformer.py --precision bf16
    KERAS_BACKEND=jax python workloads/keras_transformer.py --precision bf16 --jax-profile DIR

Sizes are multiples of 64 so every GEMM is eligible for tensor cores in fp16/bf16. ``--jax-profile DIR`` (JAX
backend) wraps the second epoch in ``jax.profiler.trace(DIR)`` with a ``StepTraceAnnotation`` per batch — the JAX
profiler's own step marks, as a JAX user writes them. Metrics file: see workloads/_common.py.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

import numpy as np

from nvprof_wrap.workloads import _common as common
from nvprof_wrap.workloads._common import keras

WORKLOAD = "keras_transformer"


def build_model(vocab: int, seq: int, width: int, layers: int, heads: int) -> keras.Model:
    tokens = keras.Input(shape=(seq,), dtype="int32")
    x = keras.layers.Embedding(vocab, width)(tokens)
    x = x + keras.layers.Embedding(seq, width)(keras.ops.arange(seq))
    for _ in range(layers):
        h = keras.layers.LayerNormalization()(x)
        h = keras.layers.MultiHeadAttention(heads, width // heads)(h, h, use_causal_mask=True)
        x = x + h
        h = keras.layers.LayerNormalization()(x)
        h = keras.layers.Dense(4 * width, activation="gelu")(h)
        x = x + keras.layers.Dense(width)(h)
    x = keras.layers.LayerNormalization()(x)
    logits = keras.layers.Dense(vocab, dtype="float32")(x)  # float32 logits: the usual mixed-precision head
    return keras.Model(tokens, logits)


class _StepMarks(keras.callbacks.Callback):  # type: ignore[misc]  # keras is untyped
    """The JAX profiler around one epoch, a StepTraceAnnotation per batch (what jax.profiler's docs show)."""

    def __init__(self, folder: str, epoch: int) -> None:
        super().__init__()
        self.folder, self.epoch = folder, epoch
        self._trace: contextlib.ExitStack | None = None
        self._step: contextlib.ExitStack | None = None
        self._n = 0

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if epoch == self.epoch:
            import jax
            self._trace = contextlib.ExitStack()
            self._trace.enter_context(jax.profiler.trace(self.folder))

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self._trace is not None:
            import jax
            self._step = contextlib.ExitStack()
            self._step.enter_context(jax.profiler.StepTraceAnnotation("train", step_num=self._n))
            self._n += 1

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self._step is not None:
            self._step.close()
            self._step = None

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._trace is not None:
            self._trace.close()
            self._trace = None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = common.base_parser(__doc__.splitlines()[0], epochs=2, batch_size=32)
    parser.add_argument("--seq", type=int, default=256, help="tokens per sample (default 256)")
    parser.add_argument("--width", type=int, default=512, help="model width (default 512)")
    parser.add_argument("--layers", type=int, default=4, help="transformer blocks (default 4)")
    parser.add_argument("--heads", type=int, default=8, help="attention heads (default 8)")
    parser.add_argument("--vocab", type=int, default=8192, help="vocabulary (default 8192)")
    parser.add_argument("--jax-profile", metavar="DIR",
                        help="JAX backend: jax.profiler.trace of the second epoch into DIR, a step mark per batch")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    common.seed_everything(args.seed)
    common.setup_precision(args.precision)
    n_train = 2048 if args.samples is None else args.samples
    rng = np.random.default_rng(args.seed)
    # a Zipf-like stream: next-token prediction has something to learn
    data = (rng.zipf(1.3, size=(n_train, args.seq + 1)) % args.vocab).astype("int32")
    x, y = data[:, :-1], data[:, 1:]
    print(f"data: synthetic ({n_train} sequences x {args.seq} tokens, vocabulary {args.vocab})", flush=True)
    sink = common.MetricsFile.from_env()
    sink.start(workload=WORKLOAD, precision=args.precision, backend=keras.backend.backend(),
               data="synthetic", epochs=args.epochs, batch_size=args.batch_size, num_classes=args.vocab,
               train_samples=n_train)
    model = build_model(args.vocab, args.seq, args.width, args.layers, args.heads)
    optimizer = keras.optimizers.AdamW(3e-4)
    if args.precision == "mixed":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    print(f"precision: {args.precision} (policy {keras.mixed_precision.global_policy().name}, "
          f"{model.count_params():,} parameters, backend {keras.backend.backend()})", flush=True)
    callbacks: list[Any] = [common.EpochMetricsCallback(sink)]
    if args.jax_profile and keras.backend.backend() == "jax":
        callbacks.append(_StepMarks(args.jax_profile, epoch=min(1, args.epochs - 1)))
    model.fit(x, y, epochs=args.epochs, batch_size=args.batch_size, callbacks=callbacks, verbose=args.verbose)
    sink.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
