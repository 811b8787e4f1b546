"""An LSTM language model as the public word-language-model example trains it (embedding, 2-layer cuDNN LSTM with
dropout, tied decoder, SGD with gradient clipping), on random tokens.

    python workloads/lstm_lm.py [--precision fp32|tf32|fp16|bf16] [--steps 20]
"""
from __future__ import annotations

import sys
from typing import Any

from nvprof_wrap.workloads._torch_common import base_parser, train


def main(argv: list[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0], steps=20, batch_size=20)
    p.add_argument("--hidden", type=int, default=650, help="default 650 (the example's 'medium' model)")
    p.add_argument("--bptt", type=int, default=35, help="default 35")
    p.add_argument("--vocab", type=int, default=33278, help="default 33278 (WikiText-2's vocabulary)")
    args = p.parse_args(argv)
    import torch
    import torch.nn.functional as F
    from torch import nn

    class LM(nn.Module):  # type: ignore[misc]  # torch is not type-checked here: Module is Any
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.5)
            self.enc = nn.Embedding(args.vocab, args.hidden)
            self.rnn = nn.LSTM(args.hidden, args.hidden, 2, dropout=0.5)
            self.dec = nn.Linear(args.hidden, args.vocab)
            self.dec.weight = self.enc.weight

        def forward(self, x: Any) -> Any:
            out, _ = self.rnn(self.drop(self.enc(x)))
            return self.dec(self.drop(out))

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    model = LM().to(dev)
    fwd = torch.compile(model) if args.compile else model
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    g = torch.Generator(device=dev).manual_seed(args.seed)

    def batch(step: int) -> tuple[Any, Any]:
        idx = torch.randint(0, args.vocab, (args.bptt + 1, args.batch_size), device=dev, generator=g)
        return idx[:-1], idx[1:]

    def loss_fn(_m: Any, x: Any, y: Any) -> Any:
        return F.cross_entropy(fwd(x).view(-1, args.vocab), y.reshape(-1))

    return train("lstm_lm", args, model, opt, batch, loss_fn, clip=0.25)


if __name__ == "__main__":
    sys.exit(main())
