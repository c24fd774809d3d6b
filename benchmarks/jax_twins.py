"""Pure-JAX twins of the real models (``examples/_gpt.py``, ``examples/_resnet.py``) for ``real_models.py``.

Each twin is a function of a parameter dict and a buffer dict keyed by the models' ``state_dict``
names, written in ``jax.numpy``/``lax`` only (no fgraph), computing the same loss as the fgraph and
PyTorch models from the same weights: ``loss_fn(params, buffers, x, y) -> (loss, new_buffers)``.
The GPT has no buffers (its output head is ``wte.weight``: the tied weight); the ResNet-8 threads
BatchNorm's running statistics through ``new_buffers``, updated as PyTorch does in training mode
(momentum 0.1, unbiased batch variance, ``num_batches_tracked + 1``).
"""
from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
from jax import lax

LN_EPS = BN_EPS = 1e-5
BN_MOMENTUM = 0.1


def cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    """Mean cross-entropy of ``(N, C)`` logits against ``(N,)`` class indices (``F.cross_entropy``)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, target[:, None], axis=-1).mean()


# -- GPT ------------------------------------------------------------------------------------------------------
def _layer_norm(x: jax.Array, p: dict, prefix: str) -> jax.Array:
    mu = x.mean(-1, keepdims=True)
    var = jnp.square(x - mu).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + LN_EPS) * p[prefix + ".weight"] + p[prefix + ".bias"]


def _linear(x: jax.Array, p: dict, name: str) -> jax.Array:
    return x @ p[name + ".weight"].T


def _attention(x: jax.Array, p: dict, prefix: str, n_head: int) -> jax.Array:
    B, T, C = x.shape
    q, k, v = (_linear(x, p, prefix + n).reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)
               for n in ("q", "k", "v"))
    scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(C // n_head)
    causal = jnp.tril(jnp.ones((T, T), dtype=bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
    y = (weights @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    return _linear(y, p, prefix + "c_proj")


def gpt_loss_fn(config) -> Callable:
    """The twin of ``make_gpt(lib, config)``: mean next-token cross-entropy, no buffers."""

    def loss_fn(p: dict, buffers: dict, idx: jax.Array, targets: jax.Array) -> tuple[jax.Array, dict]:
        x = p["wte.weight"][idx] + p["wpe.weight"][: idx.shape[1]]
        for i in range(config.n_layer):
            pre = f"h.{i}."
            x = x + _attention(_layer_norm(x, p, pre + "ln_1"), p, pre + "attn.", config.n_head)
            h = jax.nn.gelu(_linear(_layer_norm(x, p, pre + "ln_2"), p, pre + "mlp.c_fc"), approximate=False)
            x = x + _linear(h, p, pre + "mlp.c_proj")
        logits = _layer_norm(x, p, "ln_f") @ p["wte.weight"].T  # the head's weight is the embedding's (tied)
        return cross_entropy(logits.reshape(-1, config.vocab_size), targets.reshape(-1)), buffers

    return loss_fn


# -- ResNet-8 -------------------------------------------------------------------------------------------------
def _conv(x: jax.Array, w: jax.Array, stride: int) -> jax.Array:
    pad = w.shape[-1] // 2
    return lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _batch_norm(x: jax.Array, p: dict, buffers: dict, new: dict, prefix: str) -> jax.Array:
    """Training-mode BatchNorm2d: normalise by the batch's statistics; the running ones go into ``new``."""
    mean = x.mean((0, 2, 3))
    var = jnp.square(x - mean[None, :, None, None]).mean((0, 2, 3))
    n = x.size // x.shape[1]
    m = BN_MOMENTUM
    new[prefix + ".running_mean"] = (1 - m) * buffers[prefix + ".running_mean"] + m * lax.stop_gradient(mean)
    new[prefix + ".running_var"] = (1 - m) * buffers[prefix + ".running_var"] + m * lax.stop_gradient(var) * n / (n - 1)
    new[prefix + ".num_batches_tracked"] = buffers[prefix + ".num_batches_tracked"] + 1
    scale = lax.rsqrt(var + BN_EPS) * p[prefix + ".weight"]
    return (x - mean[None, :, None, None]) * scale[None, :, None, None] + p[prefix + ".bias"][None, :, None, None]


def _block(x: jax.Array, p: dict, buffers: dict, new: dict, prefix: str, stride: int) -> jax.Array:
    out = jax.nn.relu(_batch_norm(_conv(x, p[prefix + "conv1.weight"], stride), p, buffers, new, prefix + "bn1"))
    out = _batch_norm(_conv(out, p[prefix + "conv2.weight"], 1), p, buffers, new, prefix + "bn2")
    if prefix + "downsample.0.weight" in p:
        x = _batch_norm(_conv(x, p[prefix + "downsample.0.weight"], stride), p, buffers, new, prefix + "downsample.1")
    return jax.nn.relu(out + x)


def resnet8_loss_fn() -> Callable:
    """The twin of ``make_resnet8(lib)`` in training mode: cross-entropy, BatchNorm buffers threaded."""

    def loss_fn(p: dict, buffers: dict, x: jax.Array, y: jax.Array) -> tuple[jax.Array, dict]:
        new: dict = {}
        h = jax.nn.relu(_batch_norm(_conv(x, p["conv1.weight"], 1), p, buffers, new, "bn1"))
        for stage, stride in (("layer1.0.", 1), ("layer2.0.", 2), ("layer3.0.", 2)):
            h = _block(h, p, buffers, new, stage, stride)
        logits = h.mean((2, 3)) @ p["fc.weight"].T + p["fc.bias"]
        return cross_entropy(logits, y), new

    return loss_fn
