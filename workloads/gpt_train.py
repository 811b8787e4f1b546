"""A GPT training step as the common public trainers write it (token + position embeddings, pre-LayerNorm blocks
with causal scaled-dot-product attention and a GELU MLP, tied output head, dropout, AdamW, gradient clipping),
on random tokens.

    python workloads/gpt_train.py [--precision fp32|tf32|fp16|bf16] [--compile] [--steps 20] [--fused-adam]

In fp32 PyTorch runs attention through its memory-efficient CUTLASS kernels (``fmha_cutlassF_f32_*``), which use
tensor cores on sm80+ even though the data is fp32; in fp16/bf16 through flash or cuDNN attention.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from nvprof_wrap.workloads._torch_common import base_parser, train


def build(args: argparse.Namespace) -> Any:  # a torch Module
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):  # type: ignore[misc]  # torch is not type-checked here: Module is Any
        def __init__(self, d: int, heads: int, p: float) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.heads, self.p, self.drop = heads, p, nn.Dropout(p)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True)
            x = x + self.drop(self.proj(y.transpose(1, 2).contiguous().view(b, t, d)))
            return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))

    class GPT(nn.Module):  # type: ignore[misc]  # torch is not type-checked here: Module is Any
        def __init__(self, vocab: int, block: int, layers: int, d: int, heads: int, p: float) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.drop = nn.Dropout(p)
            self.blocks = nn.ModuleList(Block(d, heads, p) for _ in range(layers))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            self.head.weight = self.wte.weight  # weight tying
            for emb in (self.wte, self.wpe):
                nn.init.normal_(emb.weight, std=0.02)

        def forward(self, idx: Any) -> Any:
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

    return GPT(args.vocab, args.block, args.layers, args.d_model, args.heads, args.dropout)


def main(argv: list[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0], steps=20, batch_size=16)
    p.add_argument("--layers", type=int, default=6, help="default 6")
    p.add_argument("--d-model", type=int, default=512, help="default 512")
    p.add_argument("--heads", type=int, default=8, help="default 8")
    p.add_argument("--block", type=int, default=256, help="sequence length (default 256)")
    p.add_argument("--vocab", type=int, default=8192, help="default 8192")
    p.add_argument("--dropout", type=float, default=0.1, help="default 0.1")
    p.add_argument("--fused-adam", action="store_true", help="AdamW(fused=True) instead of the foreach default")
    args = p.parse_args(argv)
    import torch
    import torch.nn.functional as F

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    model = build(args).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=args.fused_adam or None)
    fwd = torch.compile(model) if args.compile else model
    g = torch.Generator(device=dev).manual_seed(args.seed)

    def batch(step: int) -> tuple[Any, Any]:
        idx = torch.randint(0, args.vocab, (args.batch_size, args.block + 1), device=dev, generator=g)
        return idx[:, :-1], idx[:, 1:]

    def loss_fn(_m: Any, x: Any, y: Any) -> Any:
        logits = fwd(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))

    return train("gpt_train", args, model, opt, batch, loss_fn, clip=1.0)


if __name__ == "__main__":
    sys.exit(main())
