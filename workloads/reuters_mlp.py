"""The seed workload: the Keras book's Reuters newswire MLP (chapter 3.5).

10,000-word multi-hot bag of words -> Dense 256 relu -> Dense 256 relu ->
Dense 46 softmax, rmsprop, categorical cross-entropy, 20 epochs of batch 512,
the first 1000 training samples held out for validation.

    python workloads/reuters_mlp.py --precision fp16     # the seed's setup
    python workloads/reuters_mlp.py --precision mixed    # the fix

Data: Keras' Reuters set if it is already in the local Keras cache (never
downloaded), else a deterministic synthetic set of the same shape.  Set
NVPROF_WRAP_METRICS=path to get per-epoch JSON lines (format: see
workloads/_common.py).
"""

from __future__ import annotations

import sys

from nvprof_wrap.workloads import _common as common
from nvprof_wrap.workloads._common import keras

VALIDATION = 1000  # the book holds out the first 1000 training samples
WORKLOAD = "reuters_mlp"


def build_model() -> keras.Model:
    return keras.Sequential([
        keras.Input(shape=(common.REUTERS_WORDS,)),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(256, activation="relu"),
        common.softmax_output_layer(common.REUTERS_CLASSES),
    ])


def main(argv: list[str] | None = None) -> int:
    args = common.base_parser(__doc__.splitlines()[0], epochs=20, batch_size=512).parse_args(argv)
    common.seed_everything(args.seed)
    common.setup_precision(args.precision)

    limit = None if args.samples is None else VALIDATION + args.samples
    x, labels, data_kind, data_line = common.load_reuters_train(seed=args.seed, limit=limit)
    print(f"data: {data_line}", flush=True)
    y = keras.utils.to_categorical(labels, common.REUTERS_CLASSES)
    x_val, y_val = x[:VALIDATION], y[:VALIDATION]
    x_train, y_train = x[VALIDATION:], y[VALIDATION:]

    sink = common.MetricsFile.from_env()
    sink.start(workload=WORKLOAD, precision=args.precision, backend=keras.backend.backend(),
               data=data_kind, epochs=args.epochs, batch_size=args.batch_size,
               num_classes=common.REUTERS_CLASSES, train_samples=len(x_train),
               keras2_numerics=args.keras2_numerics)
    model = build_model()
    loss, optimizer = common.make_loss_and_optimizer(args.keras2_numerics, args.precision)
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    print(f"precision: {args.precision} (policy {keras.mixed_precision.global_policy().name}, "
          f"floatx {keras.backend.floatx()}, optimizer {type(model.optimizer).__name__}"
          f", Keras 2 numerics: {args.keras2_numerics})",
          flush=True)
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=args.batch_size,
              validation_data=(x_val, y_val), callbacks=[common.EpochMetricsCallback(sink)],
              verbose=args.verbose)
    sink.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
