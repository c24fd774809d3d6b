"""nanoGPT, ported to fgraph with renames only: a character-level GPT trained on the standard library's docstrings.

Andrej Karpathy's nanoGPT (``model.py`` + ``train.py`` + ``sample.py``) written as nanoGPT writes it
(torch names: ``device``, ``dtype=torch.long``, ``AdamW`` parameter groups with and without weight decay,
tied embedding and output weights, micro-batch gradient accumulation, gradient clipping, the cosine
learning-rate schedule written into ``param_groups``, ``f"{loss:.4f}"`` logging, a checkpoint saved and
resumed, top-k sampling), with these changes and no others:

* ``import torch`` -> ``import fgraph as fg`` (``torch.nn`` -> ``fgraph.nn``, ``torch.utils.data`` ->
  ``fgraph.utils.data``);
* gradients are returned, not stored: ``loss.backward()`` returns them, micro-batches add them
  (``grads = grads + (loss / accum).backward()``), and ``optimizer.step(grads)`` takes them, so
  ``optimizer.zero_grad()`` goes; ``clip_grad_norm_`` returns the clipped gradients;
* in-place indexed writes use JAX's spelling: ``logits[logits < v] = -inf`` ->
  ``logits = logits.at[logits < v].set(-inf)``;
* ``torch.compile(model)`` -> the training step as one ``fg.compile``d program.

The batches come from a ``DataLoader`` over a map-style ``Dataset`` of (input, target) windows, as a
ported script would write it. The text ships with Python (docstrings of standard-library modules), so
nothing is downloaded. It prints the train/val loss every ``eval_interval`` iterations, saves
``ckpt.safetensors`` halfway, resumes from it in a fresh model and optimizer, and prints a sample.

Run: python examples/nanogpt_shakespeare.py [--out DIR] [--quick] [--max-iters N]   (about 2 minutes on a 2-core CPU: val loss 4.56 -> 2.81)
"""
from __future__ import annotations

import inspect
import importlib
import math
import os
import time
from dataclasses import dataclass

import numpy as np

import _common
import fgraph as fg
import fgraph.nn as nn
from fgraph.nn import functional as F
from fgraph.utils.data import DataLoader, Dataset

# the standard library's documentation: ~0.5 MB of English with code in it, the same on every machine with this Python
CORPUS_MODULES = ("argparse", "collections", "csv", "datetime", "decimal", "email.message", "fractions", "functools",
                  "heapq", "json", "logging", "pathlib", "pickle", "random", "re", "shutil", "statistics", "string",
                  "subprocess", "tarfile", "textwrap", "threading", "typing", "unittest", "urllib.parse", "zipfile")


# -- model.py ------------------------------------------------------------------------------------------------------------
class LayerNorm(nn.Module):
    """LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False"""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(fg.ones(ndim))
        self.bias = nn.Parameter(fg.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        # regularization
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.c_proj(y))
        return y


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.1
    bias: bool = False  # True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and faster


class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.config = config

        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # with weight tying when using torch.compile() some warnings get generated:
        # "UserWarning: functional_call was passed multiple values for tied weights.
        # This behavior is deprecated and will be an error in future versions"
        # not 100% sure what this is, so far seems to be harmless. TODO investigate
        self.transformer.wte.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying

        # init all weights
        self.apply(self._init_weights)
        # apply special scaled init to the residual projections, per GPT-2 paper
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                fg.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            fg.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                fg.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            fg.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
        pos = fg.arange(0, t, dtype=fg.long, device=device)  # shape (t)

        # forward the GPT model itself
        tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)

        if targets is not None:
            # if we are given some desired targets also calculate the loss
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            # inference-time mini-optimization: only forward the lm_head on the very last position
            logits = self.lm_head(x[:, [-1], :])  # note: using list [-1] to preserve the time dim
            loss = None

        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        # start with all of the candidate parameters
        param_dict = {pn: p for pn, p in self.named_parameters()}
        # filter out those that do not require grad
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
        # i.e. all weight tensors in matmuls + embeddings decay, all biases and layernorms don't.
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0}
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
        # Create AdamW optimizer and use the fused version if it is available
        fused_available = 'fused' in inspect.signature(fg.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda'
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = fg.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        print(f"using fused AdamW: {use_fused}")

        return optimizer

    @fg.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """
        Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
        the sequence max_new_tokens times, feeding the predictions back into the model each time.
        Most likely you'll want to make sure to be in model.eval() mode of operation for this.
        """
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            # forward the model to get the logits for the index in the sequence
            logits, _ = self(idx_cond)
            # pluck the logits at the final step and scale by desired temperature
            logits = logits[:, -1, :] / temperature
            # optionally crop the logits to only the top k options
            if top_k is not None:
                v, _ = fg.topk(logits, min(top_k, logits.size(-1)))
                logits = logits.at[logits < v[:, [-1]]].set(-float('Inf'))
            # apply softmax to convert logits to (normalized) probabilities
            probs = F.softmax(logits, dim=-1)
            # sample from the distribution
            idx_next = fg.multinomial(probs, num_samples=1)
            # append sampled index to the running sequence and continue
            idx = fg.cat((idx, idx_next), dim=1)

        return idx


# -- data: prepare.py, and get_batch() as a Dataset ------------------------------------------------------------------------
def load_text() -> str:
    """The docstrings of ``CORPUS_MODULES`` and of their public classes and functions, in a fixed order."""
    parts = []
    for name in CORPUS_MODULES:
        module = importlib.import_module(name)
        parts.append(inspect.getdoc(module) or "")
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if not attr.startswith("_") and getattr(obj, "__module__", None) == name:
                parts.append(inspect.getdoc(obj) or "")
    text = "\n\n".join(p for p in parts if p)
    return "".join(ch for ch in text if ch.isascii())


class CharWindows(Dataset):
    """Every ``block_size`` window of the token array: ``(x, y)`` with ``y`` the next characters."""

    def __init__(self, data, block_size):
        self.data = data
        self.block_size = block_size

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        x = fg.from_numpy((self.data[i:i + self.block_size]).astype(np.int64))
        y = fg.from_numpy((self.data[i + 1:i + 1 + self.block_size]).astype(np.int64))
        return x, y


def infinite(loader):
    while True:
        yield from loader


# -- train.py --------------------------------------------------------------------------------------------------------------
def main() -> None:
    parser = _common.make_parser(__doc__)
    parser.add_argument("--max-iters", type=int, default=None, help="training iterations (default 300; 4 with --quick)")
    args = _common.parse_args(parser)

    # default config values, nanoGPT's shakespeare_char settings scaled to a laptop CPU
    eval_interval = 100
    eval_iters = 10
    batch_size = 16
    block_size = 64
    gradient_accumulation_steps = 2
    n_layer, n_head, n_embd, dropout, bias = 3, 4, 96, 0.1, False
    learning_rate = 3e-3  # max learning rate
    max_iters = args.max_iters or (4 if args.quick else 300)
    weight_decay = 1e-1
    beta1, beta2 = 0.9, 0.99
    grad_clip = 1.0  # clip gradients at this value, or disable if == 0.0
    decay_lr = True
    warmup_iters = max(1, max_iters // 20)
    lr_decay_iters = max_iters
    min_lr = learning_rate / 10
    device = 'cuda' if fg.cuda.is_available() else 'cpu'
    compile = not args.quick  # use fg.compile to compile the training step into one program (tracing it takes ~30 s)
    device_type = 'cuda' if 'cuda' in device else 'cpu'
    if args.quick:  # a smoke test: a tiny model, a few iterations
        eval_interval, eval_iters, batch_size, block_size, n_layer, n_head, n_embd = 2, 1, 4, 16, 1, 2, 32
    out_dir = str(args.out)

    fg.manual_seed(1337 + args.seed)

    text = load_text()
    chars = sorted(set(text))
    vocab_size = len(chars)
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    encode = lambda s: [stoi[c] for c in s]  # noqa: E731 -- nanoGPT's prepare.py
    decode = lambda l: ''.join([itos[i] for i in l])  # noqa: E731
    n = len(text)
    train_data = np.array(encode(text[:int(n * 0.9)]), dtype=np.uint16)
    val_data = np.array(encode(text[int(n * 0.9):]), dtype=np.uint16)
    print(f"{n:,} characters of standard-library docstrings, vocab size {vocab_size}; "
          f"train has {len(train_data):,} tokens, val has {len(val_data):,} tokens")

    loaders = {split: infinite(DataLoader(CharWindows(data, block_size), batch_size=batch_size, shuffle=True,
                                          drop_last=True, pin_memory=device_type == 'cuda'))
               for split, data in (('train', train_data), ('val', val_data))}

    def get_batch(split):
        x, y = next(loaders[split])
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size, bias=bias,
                      vocab_size=vocab_size, dropout=dropout)
    model = GPT(GPTConfig(**model_args))
    model.to(device)
    print(f"number of parameters: {model.get_num_params() / 1e6:.2f}M")
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)

    @fg.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ['train', 'val']:
            losses = fg.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                logits, loss = model(X, Y)
                losses = losses.at[k].set(loss.item())
            out[split] = losses.mean()
        model.train()
        return out

    def get_lr(it):
        # 1) linear warmup for warmup_iters steps
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        # 2) if it > lr_decay_iters, return min learning rate
        if it > lr_decay_iters:
            return min_lr
        # 3) in between, use cosine decay down to min learning rate
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
        return min_lr + coeff * (learning_rate - min_lr)

    def train_step(X, Y):
        # forward backward update, with gradient accumulation to simulate larger batch size
        grads = None
        for micro_step in range(gradient_accumulation_steps):
            logits, loss = model(X[micro_step], Y[micro_step])
            loss = loss / gradient_accumulation_steps  # scale the loss to account for gradient accumulation
            micro_grads = loss.backward()
            grads = micro_grads if grads is None else grads + micro_grads
        # clip the gradient
        if grad_clip != 0.0:
            grads, _ = fg.nn.utils.clip_grad_norm_(grads, grad_clip)
        # step the optimizer
        optimizer.step(grads)
        return loss

    if compile:
        print("compiling the training step... (takes a ~minute)")
        train_step = fg.compile(train_step)

    def train(iter_num, stop_at):
        first_loss = last_loss = None
        t0 = time.time()
        while iter_num < stop_at:
            # determine and set the learning rate for this iteration
            lr = get_lr(iter_num) if decay_lr else learning_rate
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

            # evaluate the loss on train/val sets and write checkpoints
            if iter_num % eval_interval == 0:
                losses = estimate_loss()
                print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
                first_loss = losses['val'] if first_loss is None else first_loss
                last_loss = losses['val']

            batches = [get_batch('train') for _ in range(gradient_accumulation_steps)]
            X, Y = fg.stack([b[0] for b in batches]), fg.stack([b[1] for b in batches])
            loss = train_step(X, Y)

            # timing and logging
            t1 = time.time()
            dt = t1 - t0
            t0 = t1
            if iter_num % (eval_interval // 2 or 1) == 0:
                lossf = loss.item() * gradient_accumulation_steps
                print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms")
            iter_num += 1
        return first_loss, last_loss

    # train the first half, save a checkpoint, resume from it in a fresh model and optimizer, train the rest
    half = max_iters // 2
    first_loss, _ = train(0, half)
    checkpoint = {
        'model': model.state_dict(),
        'optimizer': optimizer.state_dict(),
        'model_args': model_args,
        'iter_num': half,
        'config': dict(learning_rate=learning_rate, max_iters=max_iters, batch_size=batch_size),
    }
    ckpt_path = os.path.join(out_dir, 'ckpt.safetensors')
    print(f"saving checkpoint to {ckpt_path}")
    fg.save(checkpoint, ckpt_path)

    checkpoint = fg.load(ckpt_path, map_location=device)
    gptconf = GPTConfig(**checkpoint['model_args'])
    model = GPT(gptconf)
    model.load_state_dict(checkpoint['model'])
    model.to(device)
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
    optimizer.load_state_dict(checkpoint['optimizer'])
    print(f"resumed from iteration {checkpoint['iter_num']}")
    _, last_loss = train(checkpoint['iter_num'], max_iters + 1)
    print(f"val loss: {first_loss:.4f} -> {last_loss:.4f}")

    # sample.py
    model.eval()
    # sample.py's start="FILE:..." with a validation block: a full context from the first step, so every step has
    # the same shapes (a growing prompt would compile each op anew for each length up to block_size)
    start_ids = val_data[:block_size].tolist()
    x = fg.tensor(start_ids, dtype=fg.long, device=device)[None, ...]
    y = model.generate(x, 8 if args.quick else 200, temperature=0.8, top_k=20)
    sample = decode(y[0].tolist()[len(start_ids):])
    print("prompt:\n" + decode(start_ids))
    print("sample:\n" + sample)
    with open(os.path.join(out_dir, "nanogpt_sample.txt"), "w") as f:
        f.write(sample + "\n")


if __name__ == "__main__":
    main()
