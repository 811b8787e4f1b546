"""A small Conv2D classifier on synthetic images (a second tensor-core workload).

Conv2D 32 -> MaxPool -> Conv2D 64 -> MaxPool -> Conv2D 64 -> Flatten ->
Dense 64 -> Dense 10 softmax, rmsprop, categorical cross-entropy.

    python workloads/convnet.py --precision mixed --channels-last
    python workloads/convnet.py --precision fp16 --channels-first

``--channels-first`` (NCHW) vs ``--channels-last`` (NHWC) matters on GPUs:
cuDNN's tensor-core convolutions want NHWC, so NCHW runs may show extra
transpose kernels.  Channel counts are multiples of 8 so fp16 tensor cores
are eligible.  Metrics file: see workloads/_common.py.
"""

from __future__ import annotations

import argparse
import sys

from nvprof_wrap.workloads import _common as common
from nvprof_wrap.workloads._common import keras

WORKLOAD = "convnet"
CLASSES = 10
IMAGE_SIZE = 32
DEFAULT_SAMPLES = 4096
VALIDATION = 1024


def build_model(data_format: str) -> keras.Model:
    shape = (IMAGE_SIZE, IMAGE_SIZE, 3) if data_format == "channels_last" \
        else (3, IMAGE_SIZE, IMAGE_SIZE)
    conv = {"kernel_size": 3, "activation": "relu", "padding": "same", "data_format": data_format}
    pool = {"pool_size": 2, "data_format": data_format}
    return keras.Sequential([
        keras.Input(shape=shape),
        keras.layers.Conv2D(32, **conv),
        keras.layers.MaxPooling2D(**pool),
        keras.layers.Conv2D(64, **conv),
        keras.layers.MaxPooling2D(**pool),
        keras.layers.Conv2D(64, **conv),
        keras.layers.Flatten(data_format=data_format),
        keras.layers.Dense(64, activation="relu"),
        common.softmax_output_layer(CLASSES),
    ])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = common.base_parser(__doc__.splitlines()[0], epochs=5, batch_size=128)
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--channels-last", dest="data_format", action="store_const",
                        const="channels_last", help="NHWC (default)")
    layout.add_argument("--channels-first", dest="data_format", action="store_const",
                        const="channels_first", help="NCHW")
    parser.set_defaults(data_format="channels_last")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    common.seed_everything(args.seed)
    common.setup_precision(args.precision)

    n_train = DEFAULT_SAMPLES if args.samples is None else args.samples
    x, labels = common.synthetic_images(VALIDATION + n_train, CLASSES, IMAGE_SIZE, seed=args.seed)
    if args.data_format == "channels_first":
        x = x.transpose(0, 3, 1, 2).copy()
    print(f"data: synthetic ({len(x)} images {IMAGE_SIZE}x{IMAGE_SIZE}x3, "
          f"{CLASSES} classes, {args.data_format})", flush=True)
    y = keras.utils.to_categorical(labels, CLASSES)

    sink = common.MetricsFile.from_env()
    sink.start(workload=WORKLOAD, precision=args.precision, backend=keras.backend.backend(),
               data="synthetic", epochs=args.epochs, batch_size=args.batch_size,
               num_classes=CLASSES, train_samples=n_train, data_format=args.data_format)
    model = build_model(args.data_format)
    loss, optimizer = common.make_loss_and_optimizer(args.keras2_numerics, args.precision)
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    print(f"precision: {args.precision} (policy {keras.mixed_precision.global_policy().name}, "
          f"floatx {keras.backend.floatx()}, optimizer {type(model.optimizer).__name__})",
          flush=True)
    model.fit(x[VALIDATION:], y[VALIDATION:], epochs=args.epochs, batch_size=args.batch_size,
              validation_data=(x[:VALIDATION], y[:VALIDATION]),
              callbacks=[common.EpochMetricsCallback(sink)], verbose=args.verbose)
    sink.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
