"""``fgraph.nn.utils``: gradient clipping and parameter/vector conversion (``torch.nn.utils``' names).

Gradients are returned by ``backward``, not stored, so the clipping functions take the
gradients and return new ones: ``grads, total_norm = clip_grad_norm_(grads, 1.0)``.
``vector_to_parameters`` rebinds new Parameters on the modules instead of copying.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils import clip_grad_norm_, parameters_to_vector
    >>> model = fg.nn.Linear(2, 2)
    >>> grads, norm = clip_grad_norm_(model(fg.ones(1, 2)).sum().backward(), max_norm=1.0)
    >>> parameters_to_vector(grads[p] for p in model.parameters()).shape
    (6,)
"""
from fgraph.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from fgraph.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from fgraph.nn.utils import clip_grad, convert_parameters, rnn
from fgraph.nn.utils import parametrize, parametrizations
from fgraph.nn.utils.hook_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
    "parameters_to_vector", "vector_to_parameters", "clip_grad", "convert_parameters", "rnn",
    "parametrize", "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
]
