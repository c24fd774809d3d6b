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
import numpy as _np

from fgraph import autograd, nn, ops, random, utils
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
from fgraph.ops.indexing import *  # noqa: F401,F403
from fgraph.ops.linalg import *  # noqa: F401,F403
from fgraph.ops.reduction import *  # noqa: F401,F403
from fgraph.ops.shape import *  # noqa: F401,F403
from fgraph.random import Generator, get_rng_state, manual_seed, set_rng_state
from fgraph.tensor import Tensor, arange, as_tensor, full, full_like, ones, ones_like, tensor, zeros, zeros_like

_install_methods()

float16 = _np.dtype("float16")
float32 = _np.dtype("float32")
float64 = _np.dtype("float64")
int32 = _np.dtype("int32")
int64 = _np.dtype("int64")
bool_ = _np.dtype("bool")
try:
    import ml_dtypes as _ml_dtypes

    bfloat16 = _np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes ships with jaxlib
    pass
float = float32
double = float64
long = int64

__version__ = "0.1.0"
