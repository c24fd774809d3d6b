"""``einsum``: one primitive whose derivative is einsum again.

The public function parses PyTorch's equation syntax (letters ``a-zA-Z``, one
``...`` per operand, implicit or explicit output, spaces ignored; or the sublist
form ``einsum(x, [0, 1], y, [1, 2], [0, 2])``) into a *canonical* subscript string:
the ellipsis replaced by explicit letters (right-aligned, so operands with fewer
ellipsis dims broadcast) and an explicit output. That string is the op's static
parameter.

The gradient for operand ``k`` with subscripts ``s_k`` is::

    einsum("<out>,<s_j for j != k>,<deltas>,<ones>-><s_k'>", grad, *others, *deltas, *ones)

where ``s_k'`` is ``s_k`` with each repeated letter replaced by a fresh one, and
each such repeat contributes an identity ``delta`` (so the gradient of a diagonal
lands on the diagonal); letters of ``s_k`` that no other term provides at full size
(summed-only or broadcast dims) get a vector of ones. Sizes broadcast from 1 are
summed back by the central ``reduce_grad``. Because the gradient is an einsum, every
order of derivative works.

Limits: at most 52 distinct labels in a call, including those the ellipsis and the
gradient need (an error names the op when they run out); real dtypes only.

Example:
    >>> import fgraph as fg
    >>> a = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> fg.einsum("ii->", a).item()
    5.0
    >>> (g,) = fg.grad(fg.einsum("ii->", a), [a])
    >>> g.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
"""
from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import apply_op, declare
from fgraph.tensor import Tensor, type_name, _wrap

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ORDER = {c: i for i, c in enumerate(sorted(_LETTERS))}  # implicit output order: A-Z then a-z, as torch


def _err(msg: str) -> OpError:
    return OpError(f"einsum: {msg}")


def _split_term(term: str, where: str) -> tuple[list[str], int]:
    """Labels of one term and the position of its ellipsis (-1 if none)."""
    labels, ell, i = [], -1, 0
    while i < len(term):
        c = term[i]
        if term.startswith("...", i):
            if ell >= 0:
                raise _err(f"{where} '{term}' has more than one ellipsis ('...'); use at most one per operand.")
            ell = len(labels)
            i += 3
            continue
        if c not in _ORDER:
            raise _err(
                f"invalid subscript {c!r} in {where} '{term}'; subscripts must be letters in [a-zA-Z] "
                "(or one '...')."
            )
        labels.append(c)
        i += 1
    return labels, ell


def _bcast(a: int | None, b: int) -> int | None:
    if a is None or a == 1:
        return b
    if b == 1 or b == a:
        return a
    return None


@functools.lru_cache(maxsize=1024)
def parse_equation(equation: str, shapes: tuple[tuple[int, ...], ...]) -> str:
    """The canonical subscripts (explicit labels, explicit output) of ``equation`` for operands of ``shapes``."""
    eq = "".join(equation.split())
    if eq.count("->") > 1:
        raise _err(f"equation {equation!r} has more than one '->'.")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        more = "more" if len(shapes) > len(terms) else "fewer"
        raise _err(
            f"{more} operands were provided ({len(shapes)}) than specified in the equation {equation!r} "
            f"({len(terms)} operand subscripts, separated by commas)."
        )
    parsed = [_split_term(t, f"operand {i}'s subscripts") for i, t in enumerate(terms)]
    covered = []
    for i, ((labels, ell), shape) in enumerate(zip(parsed, shapes)):
        if (ell < 0 and len(labels) != len(shape)) or len(labels) > len(shape):
            raise _err(
                f"the number of subscripts in the equation ({len(labels)}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {i} (shape {shape})"
                + ("" if ell >= 0 else " and no ellipsis was given")
                + "."
            )
        covered.append(len(shape) - len(labels) if ell >= 0 else 0)
    used = {c for labels, _ in parsed for c in labels}
    out_labels, out_ell = (None, -1) if not arrow else _split_term(rhs, "the output")
    if out_labels is not None:
        used.update(out_labels)
    ell_nd = max(covered, default=0)
    fresh = [c for c in _LETTERS if c not in used]
    if ell_nd > len(fresh):
        raise _err(f"too many dimensions: the ellipsis needs {ell_nd} labels but only {len(fresh)} are unused.")
    ell_letters = fresh[:ell_nd]

    expanded, sizes = [], {}
    for i, ((labels, ell), shape, cov) in enumerate(zip(parsed, shapes, covered)):
        full = labels if ell < 0 else labels[:ell] + ell_letters[ell_nd - cov:] + labels[ell:]
        own: dict[str, int] = {}
        for c, n in zip(full, shape):
            if c in own and own[c] != n:
                raise _err(f"subscript {c} is repeated for operand {i} but the sizes don't match, {own[c]} != {n}.")
            own[c] = n
            merged = _bcast(sizes.get(c), n)
            if merged is None:
                what = "an ellipsis dimension" if c in ell_letters else f"subscript {c}"
                raise _err(
                    f"{what} has size {n} for operand {i} (shape {shape}), which does not broadcast with the "
                    f"previously seen size {sizes[c]}."
                )
            sizes[c] = merged
        expanded.append("".join(full))

    if out_labels is None:
        counts: dict[str, int] = {}
        for labels, _ in parsed:
            for c in labels:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(ell_letters) + "".join(sorted((c for c, n in counts.items() if n == 1), key=_ORDER.get))
    else:
        seen = set()
        for c in out_labels:
            if c in seen:
                raise _err(f"output subscript {c} appears more than once in the output.")
            if c not in sizes:
                raise _err(f"output subscript {c} does not appear in the equation for any input operand.")
            seen.add(c)
        out_full = out_labels if out_ell < 0 else out_labels[:out_ell] + ell_letters + out_labels[out_ell:]
        out = "".join(out_full)
    return ",".join(expanded) + "->" + out


def _einsum_hint(args: tuple, params: Any) -> str:
    shapes = [tuple(a.shape) for a in args]
    return f"Check that the subscripts {params.subscripts!r} match the operand shapes {shapes}."


def _einsum_forward(*operands, subscripts):
    return natural_sharding.einsum(subscripts, *operands)


def _einsum_rule(ctx, g):
    lhs, out = ctx.params.subscripts.split("->")
    terms = lhs.split(",")
    inputs = ctx.inputs
    used = set(ctx.params.subscripts) - {",", "-", ">"}
    return tuple(
        _operand_grad(k, terms, out, inputs, g, used) if need else None for k, need in enumerate(ctx.needs)
    )


def _operand_grad(k: int, terms: list, out: str, inputs: tuple, g: Tensor, used: set) -> Tensor:
    term, x = terms[k], inputs[k]
    fresh = iter(c for c in _LETTERS if c not in used)
    subs = [out] + [t for j, t in enumerate(terms) if j != k]
    operands = [g] + [inputs[j] for j in range(len(terms)) if j != k]
    target, own = [], {}
    for c, n in zip(term, x.shape):
        if c in own:  # repeated label: a fresh one, tied to the first by an identity
            f = next(fresh, None)
            if f is None:
                raise _err(f"the gradient of {term!r} needs more than 52 distinct labels.")
            target.append(f)
            subs.append(c + f)
            operands.append(_wrap(jnp.eye(n, dtype=g.dtype)))
        else:
            own[c] = n
            target.append(c)
    provided: dict[str, int | None] = {}
    for sub, t in zip(subs, operands):
        for c, n in zip(sub, t.shape):
            provided[c] = _bcast(provided.get(c), n)
    for c, n in own.items():
        have = provided.get(c)
        if have is None or (have == 1 and n != 1):  # summed-only or broadcast label: ones at full size
            subs.append(c)
            operands.append(_wrap(jnp.ones((n,), dtype=g.dtype)))
    return apply_op(EINSUM, tuple(operands), EINSUM.Params(",".join(subs) + "->" + "".join(target)))


EINSUM = declare("einsum", _einsum_forward, _einsum_rule, params=("subscripts",), save_inputs=True,
                 hint=_einsum_hint)


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """``einsum(x, [0, 1], y, [1, 2], [0, 2])`` as an equation and operands."""
    def term(sub: Any) -> str:
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(_LETTERS):
                out.append(_LETTERS[s])
            else:
                raise _err(f"sublist entries must be ints in [0, {len(_LETTERS)}) or Ellipsis, got {s!r}.")
        return "".join(out)

    pairs = args[:-1] if len(args) % 2 else args
    operands, subs = pairs[0::2], pairs[1::2]
    if len(operands) != len(subs):
        raise _err("sublist format: expected operand, sublist pairs and an optional output sublist.")
    lhs = ",".join(term(t) for t in subs)
    rhs = "->" + term(args[-1]) if len(args) % 2 else ""
    return lhs + rhs, tuple(operands)


def einsum(equation: Any, *operands: Any) -> Tensor:
    """Einstein summation with PyTorch's syntax, e.g. ``einsum("bij,bjk->bik", x, y)``.

    Repeated labels take diagonals (``"ii->i"``), labels missing from the output are
    summed, ``...`` stands for broadcast batch dimensions, and without ``->`` the output
    is the labels used once, in alphabetical order. Operands may also be passed as one
    list, or in the sublist form ``einsum(x, [0, 1], y, [1, 2], [0, 2])``.

    Example:
        >>> import fgraph as fg
        >>> x, y = fg.ones(5, 2, 3), fg.ones(5, 3, 4)
        >>> fg.einsum("bij,bjk->bik", x, y).shape
        (5, 2, 4)
        >>> fg.einsum("...ij->...ji", x).shape, fg.einsum("ij", fg.ones(2, 3)).shape
        ((5, 3, 2), (2, 3))
    """
    if not isinstance(equation, str):
        equation, operands = _from_sublists((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise _err("must provide at least one operand.")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum: operand {i} is a {type_name(x)}, expected a Tensor.")
    canonical = parse_equation(equation, tuple(x.shape for x in operands))
    return apply_op(EINSUM, tuple(operands), EINSUM.Params(canonical))


__all__ = ["einsum"]
