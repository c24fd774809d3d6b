"""``fg.backends``: ``torch.backends``' switches that ported training scripts set, accepted as no-ops.

* ``fg.backends.cudnn.benchmark``, ``.deterministic``, ``.enabled``, ``.allow_tf32``: settable flags that
  change nothing. XLA picks its own convolution algorithms (autotuning them as it compiles); on a GPU, set
  ``XLA_FLAGS=--xla_gpu_deterministic_ops=true`` for deterministic results.
* ``fg.backends.cuda.matmul.allow_tf32`` (and ``allow_bf16_reduced_precision_reduction``,
  ``allow_fp16_reduced_precision_reduction``): accepted and recorded. JAX's matmul precision is
  ``jax.config.update("jax_default_matmul_precision", ...)`` (``"float32"`` for full float32, which is
  PyTorch's default; JAX's own default on a GPU allows TF32).
* ``fg.backends.mps.is_available()``/``is_built()``: ``False`` (JAX has no Metal backend here).
* ``fg.backends.cudnn.is_available()``: whether there is a GPU.
* ``fg.backends.compilation_cache.enable(path=None)`` / ``disable()`` / ``cache_dir()``: JAX's persistent
  compilation cache, which fgraph turns on at import (``FGRAPH_COMPILATION_CACHE=0`` keeps it off).

Example:
    >>> import fgraph as fg
    >>> fg.backends.cudnn.benchmark = True
    >>> fg.backends.cuda.matmul.allow_tf32 = True
    >>> fg.backends.mps.is_available()
    False
"""
from __future__ import annotations

from fgraph.backends import compilation_cache, cuda, cudnn, mps

__all__ = ["cudnn", "cuda", "mps", "compilation_cache"]
