"""ImageNet-style ResNet-50 training steps (torchvision's model, SGD with momentum, cross-entropy) on random images,
as the public ImageNet example runs with ``--dummy``.

    python workloads/resnet_train.py [--precision fp32|tf32|fp16|bf16] [--channels-last] [--steps 10]

fp32 convolutions use TF32 tensor cores by default in PyTorch (``torch.backends.cudnn.allow_tf32``); matmuls do not.
"""
from __future__ import annotations

import sys
from typing import Any

from nvprof_wrap.workloads._torch_common import base_parser, train


def main(argv: list[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0], steps=10, batch_size=32)
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format")
    p.add_argument("--image-size", type=int, default=224, help="default 224")
    args = p.parse_args(argv)
    import torch
    import torch.nn.functional as F
    import torchvision

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    model = torchvision.models.resnet50(weights=None).to(dev)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fwd = torch.compile(model) if args.compile else model
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (args.batch_size,), device=dev)

    def loss_fn(_m: Any, xb: Any, yb: Any) -> Any:  # torch tensors
        return F.cross_entropy(fwd(xb), yb)

    return train("resnet_train", args, model, opt, lambda step: (x, y), loss_fn)


if __name__ == "__main__":
    sys.exit(main())
