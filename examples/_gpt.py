"""A small GPT in nanoGPT's architecture, written once against torch's names.

``make_gpt(lib, config)`` builds the model with ``lib`` = ``fgraph`` or ``torch``: the same
class text makes both, so a script can copy weights across and compare the two libraries
step for step. No dropout (runs compare exactly); the embedding and the output head share
their weight, as in nanoGPT.

Used by ``sharded_gpt.py`` (FSDP x tensor parallel) and by the benchmarks' real-model rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GPTConfig:
    block_size: int = 64  # context length
    vocab_size: int = 512
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128


def make_gpt(lib: Any, config: GPTConfig) -> Any:
    """A GPT module of ``lib`` (``fgraph`` or ``torch``); call it as ``model(idx, targets) -> (logits, loss)``."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(config.n_embd, config.n_embd, bias=False)
            self.k = nn.Linear(config.n_embd, config.n_embd, bias=False)
            self.v = nn.Linear(config.n_embd, config.n_embd, bias=False)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=False)

        def forward(self, x):
            B, T, C = x.shape
            heads = config.n_head
            q, k, v = (p(x).view(B, T, heads, C // heads).transpose(1, 2) for p in (self.q, self.k, self.v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.h = nn.ModuleList([Block() for _ in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT
            for name, p in self.named_parameters():
                if name.endswith("weight") and p.ndim == 2:
                    std = 0.02 / math.sqrt(2 * config.n_layer) if name.endswith("c_proj.weight") else 0.02
                    nn.init.normal_(p, mean=0.0, std=std)

        def forward(self, idx, targets):
            pos = lib.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = F.cross_entropy(logits.reshape(-1, config.vocab_size), targets.reshape(-1))
            return logits, loss

    return GPT()


def tensor_parallel_plan(config: GPTConfig, colwise: Any, rowwise: Any) -> dict:
    """Megatron's plan for this GPT: attention heads and the MLP's hidden units split over the tensor axis
    (projections in: column-wise; projections out: row-wise), so each block needs one all-reduce per half."""
    return {"h.*.attn.q": colwise(), "h.*.attn.k": colwise(), "h.*.attn.v": colwise(),
            "h.*.attn.c_proj": rowwise(), "h.*.mlp.c_fc": colwise(), "h.*.mlp.c_proj": rowwise()}
