"""Shape and movement ops (fgraph/ops/movement.py, splitting.py, triangular.py, padding.py, shape.narrow).

Every op here is linear, so its plain Hessian is zero and a Hessian-vector product
of ``op(x)`` alone would never run a rule's rule. Each entry therefore checks
``p(op(x)) = op(x) * op(x) + op(x)``: the first derivative is ``op``'s rule applied to
a cotangent that depends on ``x``, and the HVP differentiates that rule (and its own
rule). Multi-output ops (split, chunk, unbind, tensor_split) concatenate ``p`` of the
flattened pieces they use -- all of them, or (``use=``) only some, so that the engine
fills the unused outputs' gradients with zeros.

Each op is registered in ``OPS`` with its call and reference; its cases carry ``op=name``
and related ops share a table entry (see ``_group``). The fgraph and PyTorch calls are
written once over a namespace (``fg`` or ``torch``), so ``TORCH`` pins exactly the
argument conventions of the fgraph calls. The JAX references are independent:
``jnp.pad`` (after cropping for negative amounts), ``jnp.tile``/``repeat``/``roll``/
``rot90``/``split``, masks for tril/triu, an einsum with a static one-hot array for
diag_embed. No op here is first-order only.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases

FIRST_ORDER_ONLY: dict = {}
I64 = np.int64


def p(y):
    """The nonlinearity wrapped around every op (see the module docstring)."""
    return y * y + y


def joined(pieces, use=None):
    """``p`` of the chosen pieces, flattened and concatenated (works for fgraph, torch and jnp)."""
    chosen = pieces if use is None else [pieces[i] for i in use]
    return [p(q).reshape(-1) for q in chosen]


def _cat(ns, pieces, use=None):
    return ns.cat(joined(pieces, use))


#: op name -> (call, ref): ``call(ns, *tensors, *consts, **params)`` with ``ns`` = fg or torch; ``ref`` in jnp.
OPS: dict = {}


def _op(name, call, ref, case_list):
    """Register one op and return its cases, tagged with ``op=name``."""
    OPS[name] = (call, ref)
    return [Case(c.shapes, {"op": name, **c.params}, c.consts) for c in case_list]


def _fg_call(*args, op, **params):
    return OPS[op][0](fg, *args, **params)


def _ref_call(*args, op, **params):
    return OPS[op][1](*args, **params)


def _group(name, *case_lists, static_consts=False):
    """One table entry for a few related ops (at most 6 cases).

    Every new case compiles kernels, and each entry's float32 run compiles two more cases,
    so related ops share an entry. Examples that repeat a case cost milliseconds, so the
    entry keeps the profile's 25 float64 examples: with the CI profile they draw every case.
    """
    items = [c for case_list in case_lists for c in case_list]
    return OpEntry(name, _fg_call, _ref_call, None, cases(*items), REAL, None, static_consts)


# -- calls written once over a namespace (fg or torch) --------------------------------------------------------------
def unflatten(ns, x, *, dim, sizes):
    return p(ns.unflatten(x, dim, sizes))


def movedim(ns, x, *, source, destination):
    return p(ns.movedim(x, source, destination))


def swapaxes(ns, x, *, a, b):
    return p(ns.swapaxes(x, a, b))


def expand_as(ns, x, other):
    return p(x.expand_as(other))


def broadcast_tensors(ns, *xs):
    return ns.stack([p(t) for t in ns.broadcast_tensors(*xs)])


def atleast(ns, x, *, n):
    return p(getattr(ns, f"atleast_{n}d")(x))


def stacking(ns, *xs, fn):
    return p(getattr(ns, fn)(list(xs)))


def repeat(ns, x, *, reps):
    return p(x.repeat(reps))


def tile(ns, x, *, reps):
    return p(ns.tile(x, reps))


def repeat_interleave_int(ns, x, *, repeats, dim):
    return p(ns.repeat_interleave(x, repeats, dim))


def repeat_interleave_tensor(ns, x, repeats, *, dim):
    return p(ns.repeat_interleave(x, repeats, dim))


def split(ns, x, *, size, dim, use=None):
    return _cat(ns, ns.split(x, size, dim), use)


def chunk(ns, x, *, chunks, dim):
    return _cat(ns, ns.chunk(x, chunks, dim))


def unbind(ns, x, *, dim, use=None):
    return _cat(ns, ns.unbind(x, dim), use)


def tensor_split(ns, x, *, sections, dim):
    return _cat(ns, ns.tensor_split(x, sections, dim))


def flip(ns, x, *, dims):
    return p(ns.flip(x, dims))


def flip_lr_ud(ns, x, *, fn):
    return p(getattr(ns, fn)(x))


def rot90(ns, x, *, k, dims):
    return p(ns.rot90(x, k, dims))


def roll(ns, x, *, shifts, dims):
    return p(ns.roll(x, shifts, dims))


def narrow(ns, x, *, dim, start, length):
    return p(ns.narrow(x, dim, start, length))


def diagonal(ns, x, *, offset, dim1, dim2):
    return p(ns.diagonal(x, offset, dim1, dim2))


def diag_embed(ns, x, *, offset, dim1, dim2):
    return p(ns.diag_embed(x, offset, dim1, dim2))


def diag(ns, x, *, k):
    return p(ns.diag(x, k))


def diagflat(ns, x, *, k):
    return p(ns.diagflat(x, k))


def tril(ns, x, *, k):
    return p(ns.tril(x, k))


def triu(ns, x, *, k):
    return p(ns.triu(x, k))


def pad(ns, x, *, pad, mode, value=None):
    return p(ns.nn.functional.pad(x, pad, mode=mode, value=value))


# -- pure-JAX references ----------------------------------------------------------------------------------------------
def unflatten_ref(x, *, dim, sizes):
    d = dim % x.ndim
    known = math.prod(s for s in sizes if s != -1)
    full = tuple(x.shape[d] // known if s == -1 else s for s in sizes)
    return p(jnp.reshape(x, x.shape[:d] + full + x.shape[d + 1:]))


def split_ref(x, *, size, dim, use=None):
    n = x.shape[dim]
    if isinstance(size, int):
        cuts = list(range(size, n, size)) if size else []
    else:
        cuts = list(np.cumsum(size)[:-1])
    return jnp.concatenate(joined(jnp.split(x, cuts, axis=dim), use))


def chunk_ref(x, *, chunks, dim):
    n = x.shape[dim]
    size = -(-n // chunks)
    pieces = jnp.split(x, list(range(size, n, size)), axis=dim) if n else [x] * chunks
    return jnp.concatenate(joined(pieces))


def unbind_ref(x, *, dim, use=None):
    return jnp.concatenate(joined([jnp.take(x, i, axis=dim) for i in range(x.shape[dim])], use))


def tensor_split_ref(x, *, sections, dim):
    dim, n = dim % x.ndim, x.shape[dim]
    if isinstance(sections, int):
        pieces = [jnp.take(x, idx, axis=dim) for idx in np.array_split(np.arange(n), sections)]
    else:  # Python slices between consecutive indices (they may overlap when indices decrease)
        points = [0, *sections, n]
        pieces = [x[(slice(None),) * dim + (slice(a, b),)] for a, b in zip(points[:-1], points[1:])]
    return jnp.concatenate(joined(pieces))


def narrow_ref(x, *, dim, start, length):
    start = start % x.shape[dim] if start < 0 else start
    return p(jnp.take(x, jnp.arange(start, start + length, dtype=I64), axis=dim))


def diag_embed_ref(x, *, offset, dim1, dim2):
    n = x.shape[-1] + abs(offset)
    onehot = np.zeros((x.shape[-1], n, n))
    for k in range(x.shape[-1]):
        onehot[k, k + max(-offset, 0), k + max(offset, 0)] = 1.0
    planes = jnp.einsum("...k,kij->...ij", x, onehot.astype(x.dtype))
    nd = x.ndim + 1
    return p(jnp.moveaxis(planes, (-2, -1), (dim1 % nd, dim2 % nd)))


def triangle_ref(x, *, k, upper):
    n, m = x.shape[-2:]
    rows, cols = np.indices((n, m))
    mask = (cols - rows >= k) if upper else (cols - rows <= k)
    return p(x * mask.astype(x.dtype))


def pad_ref(x, *, pad, mode, value=None):
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = tuple(slice(max(-lo, 0), x.shape[d] - max(-hi, 0)) for d, (lo, hi) in enumerate(pairs))
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if mode == "constant":
        return p(jnp.pad(x[crop], grow, constant_values=0.0 if value is None else value))
    if mode == "circular":  # PyTorch wraps around what is left after cropping
        return p(jnp.pad(x[crop], grow, mode="wrap"))
    # reflect / replicate: positions relative to the uncropped input: grow, then crop
    grown = jnp.pad(x, grow, mode={"reflect": "reflect", "replicate": "edge"}[mode])
    return p(grown[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(grown.shape, pairs))])


# -- the table --------------------------------------------------------------------------------------------------------
def C(shapes, consts=(), **params):
    return Case(shapes, params, consts)


RESHAPE = [
    *_op("unflatten", unflatten, unflatten_ref, [
        C(((2, 6),), dim=1, sizes=(3, -1)), C(((2, 0),), dim=-1, sizes=(0, 3)),
    ]),
    *_op("movedim", movedim, lambda x, *, source, destination: p(jnp.moveaxis(x, source, destination)), [
        C(((2, 3, 4),), source=(0, 1), destination=(-1, 0)),
    ]),
    *_op("swapaxes", swapaxes, lambda x, *, a, b: p(jnp.swapaxes(x, a, b)), [C(((2, 3, 4),), a=0, b=-1)]),
    *_op("expand_as", expand_as, lambda x, other: p(jnp.broadcast_to(x, other.shape)), [
        C(((3, 1),), (np.zeros((2, 3, 4)),)),
    ]),
]
BROADCAST = [
    *_op("broadcast_tensors", broadcast_tensors,
         lambda *xs: jnp.stack([p(t) for t in jnp.broadcast_arrays(*xs)]),
         [C(((2, 1, 3), (4, 1), ())), C(((0, 3), (1, 3)))]),
    *_op("atleast_nd", atleast, lambda x, *, n: p(getattr(jnp, f"atleast_{n}d")(x)), [
        C(((3,),), n=2), C(((3,),), n=3),
    ]),
]
STACK = [
    *_op("hstack_vstack_dstack", stacking, lambda *xs, fn: p(getattr(jnp, fn)(list(xs))), [
        C(((2, 1), (2, 3)), fn="hstack"), C(((3,), (2, 3)), fn="vstack"),
        C(((3,), (3,)), fn="dstack"), C(((3,), (3, 2)), fn="column_stack"),
    ]),
]
REPEAT = [
    *_op("repeat", repeat, lambda x, *, reps: p(jnp.tile(x, reps)), [
        C(((2, 3),), reps=(2, 1)), C(((3,),), reps=(2, 2)), C(((2, 3),), reps=(0, 2)),
    ]),
    *_op("tile", tile, lambda x, *, reps: p(jnp.tile(x, reps)), [C(((2, 3),), reps=(2,))]),
    *_op("repeat_interleave_int", repeat_interleave_int,
         lambda x, *, repeats, dim: p(jnp.repeat(x, repeats, axis=dim)), [
             C(((2, 3),), repeats=2, dim=1), C(((2, 3),), repeats=3, dim=None),
         ]),
]
# the reference needs concrete repeats (static_consts): its output shape depends on them
REPEAT_TENSOR = [
    *_op("repeat_interleave_tensor", repeat_interleave_tensor, lambda x, r, *, dim: p(jnp.repeat(x, r, axis=dim)), [
        C(((2, 3),), (np.array([1, 0, 2], I64),), dim=1), C(((3, 2),), (np.array([2], I64),), dim=0),
        C(((2, 3),), (np.array([1, 2, 0, 1, 1, 3], I64),), dim=None),
    ]),
]
SPLIT = [
    *_op("split", split, split_ref, [
        C(((0, 3),), size=2, dim=0), C(((2, 5),), size=[1, 0, 4], dim=-1),
        C(((2, 5),), size=[1, 0, 4], dim=1, use=(2,)), C(((6,),), size=2, dim=0, use=(0, 2)),
    ]),
    *_op("chunk", chunk, chunk_ref, [C(((6,),), chunks=4, dim=0), C(((0, 2),), chunks=3, dim=0)]),
]
UNBIND = [
    *_op("unbind", unbind, unbind_ref, [
        C(((2, 3),), dim=-1), C(((3,),), dim=0), C(((2, 4),), dim=1, use=(1, 3)),
    ]),
    *_op("tensor_split", tensor_split, tensor_split_ref, [
        C(((7,),), sections=3, dim=0), C(((2, 5),), sections=[3, -1], dim=1),
    ]),
]
FLIP = [
    *_op("flip", flip, lambda x, *, dims: p(jnp.flip(x, dims)), [
        C(((2, 3, 4),), dims=(0, 2)), C(((2, 3),), dims=(-1,)), C(((0, 3),), dims=(0, 1)),
    ]),
    *_op("roll", roll, lambda x, *, shifts, dims: p(jnp.roll(x, shifts, dims)), [
        C(((2, 3),), shifts=1, dims=None), C(((2, 3),), shifts=(1, -4), dims=(0, 1)),
        C(((2, 3),), shifts=(1, 1), dims=(1, 1)),
    ]),
]
ROTATE = [
    *_op("narrow", narrow, narrow_ref, [
        C(((2, 3),), dim=1, start=-2, length=2), C(((3, 2),), dim=-2, start=1, length=0),
    ]),
    *_op("fliplr_flipud", flip_lr_ud, lambda x, *, fn: p(getattr(jnp, fn)(x)), [C(((2, 3),), fn="fliplr")]),
    *_op("rot90", rot90, lambda x, *, k, dims: p(jnp.rot90(x, k, dims)), [
        C(((2, 3),), k=1, dims=(0, 1)), C(((2, 3),), k=2, dims=(0, 1)), C(((2, 3, 4),), k=-1, dims=(2, 0)),
    ]),
]
DIAGONAL = [
    *_op("diagonal", diagonal, lambda x, *, offset, dim1, dim2: p(jnp.diagonal(x, offset, dim1, dim2)), [
        C(((3, 4),), offset=-2, dim1=1, dim2=0), C(((2, 3, 4),), offset=1, dim1=2, dim2=0),
        C(((3, 3),), offset=5, dim1=0, dim2=1),
    ]),
    *_op("diag_embed", diag_embed, diag_embed_ref, [
        C(((2, 3),), offset=1, dim1=0, dim2=2), C(((2, 3),), offset=-1, dim1=2, dim2=0),
    ]),
]
TRIANGLE = [
    *_op("diag", diag, lambda x, *, k: p(jnp.diag(x, k)), [C(((3,),), k=-2), C(((3, 4),), k=1)]),
    *_op("diagflat", diagflat, lambda x, *, k: p(jnp.diagflat(x, k)), [C(((2, 2),), k=1)]),
    *_op("tril", tril, lambda x, *, k: triangle_ref(x, k=k, upper=False), [C(((2, 3, 4),), k=-1)]),
    *_op("triu", triu, lambda x, *, k: triangle_ref(x, k=k, upper=True), [C(((3, 4),), k=1), C(((2, 3, 3),), k=-2)]),
]
PAD = _op("pad", pad, pad_ref, [
    C(((2, 3),), pad=(1, 0, 0, 2), mode="constant", value=1.5),
    C(((2, 3, 4),), pad=(-1, 2, 0, 0, 1, 1), mode="constant"),
    C(((0, 3),), pad=(1, 1, 1, 0), mode="constant"),
    C(((2, 3, 4),), pad=(2, 1, 1, 0), mode="reflect"),
    C(((2, 5),), pad=(-1, 3), mode="reflect"),
    C(((0, 2, 4),), pad=(1, 2), mode="reflect"),
    C(((2, 3),), pad=(4, 1), mode="replicate"),
    C(((1, 1, 2, 2, 2),), pad=(1, -1, 2, 2, 0, 1), mode="replicate"),
    C(((2, 3, 4),), pad=(2, 1, -1, 2), mode="circular"),
    C(((2, 5),), pad=(-2, 3), mode="circular"),
])

TABLE = [
    _group("unflatten_movedim_expand_as", RESHAPE),
    _group("broadcast_atleast", BROADCAST),
    _group("stacking", STACK),
    _group("repeat_tile", REPEAT),
    _group("repeat_interleave_tensor", REPEAT_TENSOR, static_consts=True),
    _group("split_chunk", SPLIT),
    _group("unbind_tensor_split", UNBIND),
    _group("flip_roll", FLIP),
    _group("narrow_fliplr_rot90", ROTATE),
    _group("diagonal_diag_embed", DIAGONAL),
    _group("diag_tril_triu", TRIANGLE),
    _group("pad", PAD[:6]),
    _group("pad_replicate_circular", PAD[6:]),
]


def _torch_call(*args, op, **params):
    import torch

    return OPS[op][0](torch, *args, **params)


try:
    import torch  # noqa: F401

    TORCH = {entry.name: _torch_call for entry in TABLE}
except ImportError:  # PyTorch is an optional oracle
    TORCH = {}
