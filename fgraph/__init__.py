"""fgraph: PyTorch's define-by-run autograd graph on JAX arrays and kernels.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.5, 0.75], requires_grad=True)
    >>> y = fg.exp(x).sum()
    >>> y.grad_fn.name()
    'SumBackward0'
    >>> grads = fg.backward(y)
    >>> grads[x].tolist() == fg.exp(x).tolist()
    True
"""
import os as _os

import numpy as _np

from fgraph import _compilation_cache  # noqa: F401  # JAX's persistent compilation cache, on by default

from fgraph import autograd, linalg, nn, ops, optim, random, utils
from fgraph import func, viz
from fgraph._methods import install as _install_methods
from fgraph.autograd import (
    Gradients,
    backward,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from fgraph.errors import GradError, OpError
# Every op family's public functions (each module's ``__all__``).
from fgraph.ops.elementwise import *  # noqa: F401,F403
from fgraph.ops.elementwise_math import *  # noqa: F401,F403
from fgraph.ops.indexing import *  # noqa: F401,F403
from fgraph.ops.gather_scatter import *  # noqa: F401,F403
from fgraph.ops.linalg import *  # noqa: F401,F403
from fgraph.ops.linalg_toplevel import *  # noqa: F401,F403
from fgraph.ops.sorting import *  # noqa: F401,F403
from fgraph.ops.selection import *  # noqa: F401,F403
from fgraph.ops.unique import *  # noqa: F401,F403
from fgraph.ops.linalg_more import *  # noqa: F401,F403
from fgraph.ops.linalg_lu import *  # noqa: F401,F403
from fgraph.ops.complex_parts import *  # noqa: F401,F403
from fgraph.ops.reduction import *  # noqa: F401,F403
from fgraph.ops.reduction_minmax import *  # noqa: F401,F403
from fgraph.ops.reduction_norm import *  # noqa: F401,F403
from fgraph.ops.scan import *  # noqa: F401,F403
from fgraph.ops.rounding import *  # noqa: F401,F403
from fgraph.ops.shape import *  # noqa: F401,F403
from fgraph.ops.movement import *  # noqa: F401,F403
from fgraph.ops.padding import *  # noqa: F401,F403
from fgraph.ops.splitting import *  # noqa: F401,F403
from fgraph.ops.triangular import *  # noqa: F401,F403
from fgraph.ops.special import *  # noqa: F401,F403
from fgraph.ops.trigonometric import *  # noqa: F401,F403
from fgraph.ops.creation import *  # noqa: F401,F403
from fgraph.ops.random_ops import *  # noqa: F401,F403
from fgraph.ops.structure import *  # noqa: F401,F403
from fgraph.ops.products import *  # noqa: F401,F403
from fgraph.ops.distances import *  # noqa: F401,F403
from fgraph.ops.grids import *  # noqa: F401,F403
from fgraph.ops.numerics import *  # noqa: F401,F403
from fgraph.ops.numerics_reduce import *  # noqa: F401,F403
from fgraph.ops.special_more import *  # noqa: F401,F403
from fgraph.ops.complex_more import *  # noqa: F401,F403
from fgraph.ops.linalg_legacy import *  # noqa: F401,F403
from fgraph.ops.torch_extras import *  # noqa: F401,F403
from fgraph.ops.spectral import *  # noqa: F401,F403
from fgraph.func import vmap  # torch.vmap is torch.func.vmap
from fgraph import special  # torch.special's names
from fgraph import fft  # torch.fft's names
from fgraph import amp  # torch.amp's names: autocast, GradScaler
from fgraph.amp import autocast
# Devices with torch's names: fg.device (the class; its module stays importable as ``from fgraph.device import
# ...``), fg.cuda, fg.cpu (with the deprecated fg.cuda.amp / fg.cpu.amp spellings), fg.accelerator, fg.backends.
from fgraph.device import device, get_default_device, set_default_device  # noqa: F811
from fgraph import accelerator, backends, cpu, cuda  # noqa: E402
from fgraph.special import log_softmax, softmax  # torch.softmax(input, dim, dtype=None)
from fgraph.random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from fgraph._exchange import from_dlpack
from fgraph.serialization import load, save
from fgraph.tensor import (
    Tensor,
    arange,
    as_tensor,
    full,
    full_like,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)

_install_methods()

# ``fg.compile`` is the function; its package stays importable as ``fgraph.compile`` (``from fgraph.compile import
# CompileError``), as ``torch.compile`` is a function.
from fgraph.compile import compile  # noqa: E402,F811
from fgraph import distributed  # noqa: E402
from fgraph import distributions  # noqa: E402  # torch.distributions' names
from fgraph.lazy import lazy  # noqa: E402,F811  # fg.lazy is the context manager (fg.lazy.stats() etc.)

# Dtype names (fg.float32, fg.int64, fg.bool...), promotion and the default dtype. Last: it
# rebinds float/int/bool in this namespace, as torch does.
from fgraph.dtypes import *  # noqa: F401,F403,E402

__version__ = "0.1.0"

# Deferred dispatch is on in the importing thread (docs/lazy.md): eager ops record, a trace runs when a value is
# needed, and a recurring one runs as one program. ``FGRAPH_DEFERRED=0`` (or ``fg.lazy.set_deferred(False)``)
# dispatches op by op instead.
if _os.environ.get("FGRAPH_DEFERRED", "").strip().lower() not in ("0", "false", "off", "no"):
    lazy.set_deferred(True)
