"""``LazyArray``: the placeholder a kernel call returns in lazy mode.

It carries the output's abstract value (``shape``, ``dtype``, ``aval``), so graph
recording works unchanged, and its concrete value once the trace that makes it has
run (:meth:`LazyArray.value`). Anything that needs the values -- NumPy conversion,
printing, ``jnp`` functions (``__jax_array__``), a ``jax.jit`` call (it is a pytree
whose one child is the concrete array), any attribute of ``jax.Array`` not defined
here -- *materializes* it: the pending trace runs, then the request is served by the
concrete array. So a code path that is not routed through the recorder stays
correct, only slower.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable, Optional

import jax
import numpy as np

__all__ = ["LazyArray", "is_lazy", "concrete"]


class LazyArray:
    """The output of a recorded kernel call: abstract until its trace runs, then a view of the result."""

    __slots__ = ("aval", "shape", "dtype", "weak_type", "_kid", "_rec", "_slot", "_concrete", "_tensor", "__weakref__")

    def __init__(self, aval: Any, kid: int, rec: Any, slot: int) -> None:
        self.aval = aval
        self.shape = aval.shape
        self.dtype = aval.dtype
        self.weak_type = aval.weak_type
        self._kid = kid
        self._rec = rec
        self._slot = slot
        self._concrete: Optional[jax.Array] = None
        self._tensor: Any = None  # weakref to the Tensor holding this placeholder (see resolve)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # np.prod of a tuple costs microseconds

    @property
    def committed(self) -> bool:
        return False  # placed by the replay, like any kernel output; callers then leave it where it is

    @property
    def resolved(self) -> bool:
        """Whether the trace that makes this value has run."""
        return self._concrete is not None

    @property
    def abstract(self) -> bool:
        """Whether this is a per-sample value inside ``fgraph.func.vmap``: no one can read it (like a tracer)."""
        rec = self._rec
        return self._concrete is None and rec is not None and rec.abstract

    def value(self) -> jax.Array:
        """The concrete array; runs the pending trace first if it has not run yet."""
        if self._concrete is None:
            rec = self._rec
            if rec is None:
                raise RuntimeError("LazyArray: this value's trace was discarded after an error; recompute it.")
            rec.flush()
            if self._concrete is None:
                raise RuntimeError("LazyArray: the trace ran but did not produce this value (an fgraph bug).")
        return self._concrete

    def __jax_array__(self) -> jax.Array:
        return self.value()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = np.asarray(self.value())
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(self, **kwargs: Any) -> Any:  # dunder names are looked up on the class: not via __getattr__
        return self.value().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        return self.value().__dlpack_device__()

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not defined here (astype, sharding, devices, ...): materialize and delegate.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value(), name)

    def __repr__(self) -> str:
        if self._concrete is None:
            return f"LazyArray<{self.aval.str_short()}, pending>"
        return f"LazyArray({self._concrete!r})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        return iter(self.value())

    def __bool__(self) -> bool:
        return bool(self.value())

    def __float__(self) -> float:
        return float(self.value())

    def __int__(self) -> int:
        return int(self.value())

    def __index__(self) -> int:
        return operator.index(self.value())

    def __getitem__(self, index: Any) -> Any:
        return self.value()[index]

    __hash__ = object.__hash__

    def resolve(self, value: jax.Array) -> None:
        """Take the concrete ``value``; the Tensor that holds this placeholder then holds ``value`` itself,
        so later eager kernels get a plain array (a ``jax.jit`` call on a placeholder takes the pytree path,
        and compiles each kernel once more for it)."""
        self._concrete = value
        self._rec = None
        owner = self._tensor
        if owner is not None:
            t = owner()
            if t is not None and t._array is self:
                _OWNER_SETTER[0](t, value)


#: Sets a Tensor's array (``fgraph.tensor`` puts its slot setter here; this module imports no fgraph).
_OWNER_SETTER: list = [None]


def _delegate(name: str) -> Callable[..., Any]:
    """A dunder that materializes ``self`` and applies ``name`` to the concrete array."""
    def method(self: LazyArray, *args: Any) -> Any:
        return getattr(self.value(), name)(*args)
    method.__name__ = name
    return method


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv",
              "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or", "ror", "xor", "rxor",
              "neg", "pos", "abs", "invert", "lt", "le", "gt", "ge", "eq", "ne"):
    setattr(LazyArray, f"__{_name}__", _delegate(f"__{_name}__"))
LazyArray.__hash__ = object.__hash__  # type: ignore[method-assign]  # __eq__ above would unset it


def is_lazy(x: Any) -> bool:
    """Whether ``x`` is a :class:`LazyArray` (resolved or not)."""
    return type(x) is LazyArray


def concrete(x: Any) -> Any:
    """``x``'s concrete array if it is a :class:`LazyArray`, else ``x`` unchanged."""
    return x.value() if type(x) is LazyArray else x


def _flatten(x: LazyArray) -> tuple:
    return (x.value(),), None


def _unflatten(aux: Any, children: Any) -> Any:
    return children[0]  # the concrete array (or the tracer jit made of it), never a new placeholder


jax.tree_util.register_pytree_node(LazyArray, _flatten, _unflatten)
