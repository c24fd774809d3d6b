"""The PyTorch oracle for the starter ops (the table in ``tests/test_ops_against_jax.py``).

The starter table lives in ``test_ops_against_jax.py``, so this module has no
entries of its own (``TABLE = []``); :data:`STARTER_TORCH` maps the starter
entries' names to PyTorch calls with the same signature as their ``fg_fn``
(``torch_fn(*tensors, *consts, **params)``), for ``tests/test_ops_against_torch.py``.
torch is imported only when a function is called: it is an optional oracle.
"""
from test_ops_against_jax import A, _fill

TABLE = []


class _LazyTorch:
    """``torch.<name>`` resolved at call time: the oracle is optional and slow to import."""

    def __getattr__(self, name):
        import torch

        return getattr(torch, name)


torch = _LazyTorch()

_SCALAR_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow"}


def _scalar_operand(x, *, op, scalar, left):
    f = getattr(torch, _SCALAR_OPS[op])
    if left:  # torch.add(1.5, x) is not a signature; the operators are
        return {"add": lambda: scalar + x, "sub": lambda: scalar - x, "mul": lambda: scalar * x,
                "div": lambda: scalar / x, "pow": lambda: scalar ** x}[op]()
    return f(x, scalar)


def _getitem_basic(x, *, index):
    """``x[index]``; torch has no negative slice steps, so those dimensions are flipped first."""
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    dim, flips, fixed = 0, [], []
    for i in index:
        if i is Ellipsis:
            fixed.append(i)
            dim += x.ndim - consumed
            continue
        if i is None:
            fixed.append(i)
            continue
        if isinstance(i, slice) and i.step is not None and i.step < 0:
            n = x.shape[dim]
            picked = range(*i.indices(n))
            flips.append(dim)
            fixed.append(slice(n - 1 - picked[0], n - picked[-1], -i.step) if len(picked) else slice(0, 0))
        else:
            fixed.append(i)
        dim += 1
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(fixed)]


def _getitem_arrays(x, *arrays, template):
    return x[_fill(template, arrays)]


def _squeeze(x, *, dim):
    return torch.squeeze(x) if dim is None else torch.squeeze(x, dim)


assert A == "array"  # the template placeholder _fill replaces

#: Starter entry name -> PyTorch call with the entry's ``fg_fn`` signature.
STARTER_TORCH = {
    "add": lambda a, b: torch.add(a, b),
    "sub": lambda a, b: torch.sub(a, b),
    "mul": lambda a, b: torch.mul(a, b),
    "div": lambda a, b: torch.div(a, b),
    "neg": lambda x: torch.neg(x),
    "scalar_operand": _scalar_operand,
    "pow_int_exponent": lambda x, p: torch.pow(x, p),
    "pow_float_exponent": lambda x, p: x ** p,
    "pow_tensor": lambda a, b: torch.pow(a, b),
    "exp": lambda x: torch.exp(x),
    "log": lambda x: torch.log(x),
    "sin": lambda x: torch.sin(x),
    "cos": lambda x: torch.cos(x),
    "tanh": lambda x: torch.tanh(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "relu": lambda x: torch.relu(x),
    "sqrt": lambda x: torch.sqrt(x),
    "abs": lambda x: torch.abs(x),
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "where": lambda x, y, cond: torch.where(cond, x, y),
    "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "sum": lambda x, dim, keepdim: torch.sum(x, dim, keepdim),
    "mean": lambda x, dim, keepdim: torch.mean(x, dim, keepdim),
    "sum_method": lambda x, dim, keepdim: x.sum(dim, keepdim),
    "matmul": lambda a, b: torch.matmul(a, b),
    "reshape": lambda x, shape: torch.reshape(x, shape),
    "transpose": lambda x, d0, d1: torch.transpose(x, d0, d1),
    "permute": lambda x, dims: torch.permute(x, dims),
    "expand": lambda x, sizes: x.expand(sizes),
    "squeeze": _squeeze,
    "unsqueeze": lambda x, dim: torch.unsqueeze(x, dim),
    "getitem_basic": _getitem_basic,
    "getitem_int_array": _getitem_arrays,
    "getitem_bool_mask": _getitem_arrays,
    "cat": lambda *xs, dim: torch.cat(xs, dim),
    "stack": lambda *xs, dim: torch.stack(xs, dim),
}
