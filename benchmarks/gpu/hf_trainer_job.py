"""A Hugging Face Trainer job as users write one, with no step marks of its own (issue 22: `--steps` on the HF
Trainer). A small GPT-2 built from its config (no download: the GPU machine has no network), trained on random
tokens, bf16, 60 optimizer steps; nothing in it knows about nvprof-wrap or NVTX.

    nvprof-wrap run --backend cupti -- python benchmarks/gpu/hf_trainer_job.py OUT_DIR
"""
from __future__ import annotations

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n: int, length: int, vocab: int) -> None:
        self.data = torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main(out_dir: str) -> None:
    config = GPT2Config(vocab_size=8192, n_positions=256, n_embd=384, n_layer=6, n_head=6)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(output_dir=out_dir, max_steps=60, per_device_train_batch_size=16, bf16=True,
                             logging_steps=20, save_strategy="no", report_to="none", dataloader_num_workers=0)
    Trainer(model=model, args=args, train_dataset=RandomTokens(2048, 256, config.vocab_size)).train()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hf-trainer-out")
