"""``fg.backends.cuda``: ``torch.backends.cuda.matmul.allow_tf32`` and friends, accepted and recorded.

They change nothing: JAX's matmul precision is ``jax.config.update("jax_default_matmul_precision", ...)``
(``"float32"`` for full float32, PyTorch's default; JAX's own default on a GPU allows TF32).
"""
from __future__ import annotations

from types import SimpleNamespace

__all__ = ["matmul", "is_built"]

#: ``matmul.allow_tf32``, ``allow_bf16_reduced_precision_reduction``, ``allow_fp16_reduced_precision_reduction``:
#: accepted and recorded, no effect.
matmul = SimpleNamespace(allow_tf32=False, allow_bf16_reduced_precision_reduction=True,
                         allow_fp16_reduced_precision_reduction=True)


def is_built() -> bool:
    """Whether JAX has a GPU backend here."""
    from fgraph.cuda import is_available

    return is_available()
