"""torch.func's API on fgraph's engine: functional_call, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
linearize, vmap.

Functions of Tensors and pytrees of Tensors (dicts of parameters, tuples) in,
functions computing derivatives or batched results out; they compose
(``vmap(grad(f))``, ``jacrev(jacrev(f))``, ``grad(grad(f))``). See ``docs/func.md``.

Per-sample gradients of a Module:

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> from fgraph.func import functional_call, grad, vmap
    >>> model = fg.nn.Linear(3, 2)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss_fn(params, x, y):
    ...     return F.cross_entropy(functional_call(model, params, (x[None],)), y[None])
    >>> x, y = fg.randn(5, 3), fg.tensor([0, 1, 1, 0, 1])
    >>> g = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
    >>> g["weight"].shape, g["bias"].shape
    ((5, 2, 3), (5, 2))
"""
from fgraph.func.functional_call import functional_call
from fgraph.func.transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from fgraph.func.vmap import vmap

__all__ = [
    "functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "vmap",
]
