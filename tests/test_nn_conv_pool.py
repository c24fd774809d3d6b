"""Convolution, pooling, upsampling and flatten layers against PyTorch and pure-JAX references (see nn_harness).

The references are written directly on ``jax.lax`` / ``jax.image`` / ``jax.numpy``:
convolutions on ``lax.conv_general_dilated`` (``jnp.pad`` for the padding modes),
transposed convolutions as the ``jax.vjp`` of a convolution, pooling on
``lax.reduce_window`` (indices from a variadic ``reduce_window``) or explicit window
slices, linear resampling on ``jax.image.scale_and_translate``.
"""
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from nn_harness import LayerCase, MODES, case_ids, check_against_reference, check_against_torch

HIGHEST = jax.lax.Precision.HIGHEST
_SPEC = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}
_NP_PAD = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _x(*shape):
    return lambda rng: (rng.standard_normal(shape),)


def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _jit(ref):
    """The reference as one jitted program, far faster to check than op-by-op JAX (where each op compiles).
    These layers behave the same in train and eval mode, so one compiled program serves both."""
    jitted = jax.jit(lambda state, *inputs: ref(state, *inputs, training=False))

    def run(state, *inputs, training):
        return jitted(state, *inputs)
    return run


def _batched(fn, n):
    """Run ``fn`` on a batched input; an unbatched ``(C, *spatial)`` input gets a batch dim of 1 and loses it."""
    def run(x):
        if x.ndim == n + 1:
            return jax.tree_util.tree_map(lambda y: y[0], fn(x[None]))
        return fn(x)
    return run


# -- convolutions --------------------------------------------------------------------------------------
def _conv_ref(n, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros"):
    stride, dilation = _tup(stride, n), _tup(dilation, n)

    def ref(state, x, training):
        w = state["weight"]
        if padding == "same":
            totals = [d * (k - 1) for d, k in zip(dilation, w.shape[2:])]
            pads = [(t // 2, t - t // 2) for t in totals]
        elif padding == "valid":
            pads = [(0, 0)] * n
        else:
            pads = [(p, p) for p in _tup(padding, n)]

        def conv(xb):
            p = pads
            if padding_mode != "zeros":
                xb = jnp.pad(xb, [(0, 0), (0, 0)] + p, mode=_NP_PAD[padding_mode])
                p = [(0, 0)] * n
            y = jax.lax.conv_general_dilated(xb, w, stride, p, rhs_dilation=dilation, dimension_numbers=_SPEC[n],
                                             feature_group_count=groups, precision=HIGHEST)
            return y + state["bias"].reshape((-1,) + (1,) * n) if "bias" in state else y
        return _batched(conv, n)(x)
    return ref


def _conv_transpose_ref(n, stride=1, padding=0, output_padding=0, groups=1, dilation=1, output_size=None):
    """A transposed convolution is the vjp of the convolution with the same arguments; ``weight`` (in, out/g, *k)
    is that convolution's (O, I, *k) weight."""
    stride, padding, dilation = _tup(stride, n), _tup(padding, n), _tup(dilation, n)

    def ref(state, x, training):
        w = state["weight"]

        def conv_t(xb):
            k = w.shape[2:]
            if output_size is not None:
                size = tuple(output_size)[-n:]
            else:
                size = tuple((L - 1) * s - 2 * p + d * (kk - 1) + o + 1 for L, s, p, d, kk, o in
                             zip(xb.shape[2:], stride, padding, dilation, k, _tup(output_padding, n)))
            z = jnp.zeros((xb.shape[0], w.shape[1] * groups) + size, xb.dtype)

            def conv(z):
                return jax.lax.conv_general_dilated(z, w, stride, [(p, p) for p in padding], rhs_dilation=dilation,
                                                    dimension_numbers=_SPEC[n], feature_group_count=groups,
                                                    precision=HIGHEST)
            y = jax.vjp(conv, z)[1](xb)[0]
            return y + state["bias"].reshape((-1,) + (1,) * n) if "bias" in state else y
        return _batched(conv_t, n)(x)
    return ref


def _conv_case(name, n, args, kwargs, shape, transposed=False, call_kwargs=None):
    cls = ("ConvTranspose" if transposed else "Conv") + f"{n}d"
    if transposed:
        ref = _conv_transpose_ref(n, **{k: v for k, v in kwargs.items() if k != "bias"}, **(call_kwargs or {}))
    else:
        ref = _conv_ref(n, **{k: v for k, v in kwargs.items() if k != "bias"})
    return LayerCase(name, lambda: getattr(nn, cls)(*args, **kwargs), _x(*shape),
                     lambda t: getattr(t.nn, cls)(*args, **kwargs), _jit(ref), kwargs=call_kwargs or {})


# Weight shapes repeat across cases on purpose: each new shape compiles new init kernels.
CONV_CASES = [
    _conv_case("Conv1d-valid-strided", 1, (2, 4, 3), dict(stride=2, padding="valid"), (2, 2, 7)),
    _conv_case("Conv1d-dilated-groups-reflect", 1, (4, 4, 3),
               dict(stride=2, padding=2, dilation=2, groups=2, padding_mode="reflect"), (2, 4, 9)),
    _conv_case("Conv1d-same-evenkernel-circular-nobias", 1, (2, 4, 4),
               dict(padding="same", padding_mode="circular", bias=False), (2, 2, 6)),
    _conv_case("Conv2d-padded", 2, (2, 4, 3), dict(padding=1), (2, 2, 5, 6)),
    _conv_case("Conv2d-depthwise-rect", 2, (4, 4, (3, 2)),
               dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=4, bias=False), (1, 4, 6, 7)),
    _conv_case("Conv2d-same-replicate-unbatched", 2, (2, 4, 3), dict(padding="same", padding_mode="replicate"),
               (2, 5, 5)),
    _conv_case("Conv3d-groups-reflect", 3, (2, 4, (2, 3, 2)),
               dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2, padding_mode="reflect"), (1, 2, 3, 5, 4)),
    _conv_case("ConvTranspose1d", 1, (4, 2, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 5), True),
    _conv_case("ConvTranspose1d-groups-dilated-unbatched", 1, (4, 4, 3), dict(groups=2, dilation=2, bias=False),
               (4, 5), True),
    _conv_case("ConvTranspose2d-outpad-groups", 2, (4, 4, 3), dict(stride=3, padding=1, output_padding=2, groups=2),
               (1, 4, 3, 3), True),
    _conv_case("ConvTranspose2d-output_size", 2, (4, 2, 3), dict(stride=(2, 1), padding=(1, 0)), (2, 4, 4, 3), True,
               call_kwargs={"output_size": (8, 5)}),
    _conv_case("ConvTranspose3d", 3, (4, 2, 2), dict(stride=(1, 2, 2)), (1, 4, 2, 3, 2), True),
]


# -- pooling ---------------------------------------------------------------------------------------------
def _pool_geometry(n, shape, kernel_size, stride, padding, dilation, ceil_mode):
    """Per dim: (k, s, p, d, number of outputs), torch's output-size rule."""
    k, p, d = _tup(kernel_size, n), _tup(padding, n), _tup(dilation, n)
    s = k if stride is None else _tup(stride, n)
    geo = []
    for L, kk, ss, pp, dd in zip(shape[-n:], k, s, p, d):
        span = L + 2 * pp - dd * (kk - 1) - 1
        o = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (o - 1) * ss >= L + pp:
            o -= 1
        geo.append((kk, ss, pp, dd, o))
    return geo


def _window(geo, fn, x, init, **kw):
    """``lax.reduce_window`` over the spatial dims (right padding generous, then cut to the output size)."""
    ones = (1, 1)
    out = jax.lax.reduce_window(x, init, fn, ones + tuple(g[0] for g in geo), ones + tuple(g[1] for g in geo),
                                [(0, 0), (0, 0)] + [(g[2], g[2] + g[1]) for g in geo], **kw)
    return out[(Ellipsis,) + tuple(slice(0, g[4]) for g in geo)]


def _first_max(a, b):
    (av, ai), (bv, bi) = a, b
    take_a = (av > bv) | ((av == bv) & (ai < bi))
    return jnp.where(take_a, av, bv), jnp.where(take_a, ai, bi)


def _max_pool_ref(n, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
    def ref(state, x, training):
        def pool(xb):
            geo = _pool_geometry(n, xb.shape, kernel_size, stride, padding, dilation, ceil_mode)
            # the max over the kernel offsets of strided slices (JAX has no vjp for a dilated max reduce_window)
            padded = jnp.pad(xb, [(0, 0), (0, 0)] + [(p, p + s + d * (k - 1)) for k, s, p, d, _ in geo],
                             constant_values=-jnp.inf)
            out = None
            for offsets in itertools.product(*[range(g[0]) for g in geo]):
                part = padded[(Ellipsis,) + tuple(slice(j * d, j * d + (o - 1) * s + 1, s)
                                                  for j, (_, s, _, d, o) in zip(offsets, geo))]
                out = part if out is None else jnp.maximum(out, part)
            if not return_indices:
                return out
            flat = jnp.broadcast_to(jnp.arange(math.prod(xb.shape[2:])).reshape(xb.shape[2:]), xb.shape)
            ones, dil = (1, 1), (1, 1) + tuple(g[3] for g in geo)
            _, idx = jax.lax.reduce_window(
                (jax.lax.stop_gradient(xb), flat), (-jnp.inf, np.int64(-1)), _first_max,
                ones + tuple(g[0] for g in geo), ones + tuple(g[1] for g in geo),
                [(0, 0), (0, 0)] + [(g[2], g[2] + g[1]) for g in geo], window_dilation=dil)
            return out, idx[(Ellipsis,) + tuple(slice(0, g[4]) for g in geo)]
        return _batched(pool, n)(x)
    return ref


def _avg_pool_ref(n, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    def ref(state, x, training):
        def pool(xb):
            geo = _pool_geometry(n, xb.shape, kernel_size, stride, padding, 1, ceil_mode)
            total = _window(geo, jax.lax.add, xb, 0.0)
            if divisor_override:
                return total / divisor_override
            ones = jnp.ones((1, 1) + xb.shape[2:])
            if count_include_pad:  # the explicit padding counts, the ceil_mode overhang does not
                ones = jnp.pad(ones, [(0, 0), (0, 0)] + [(g[2], g[2]) for g in geo], constant_values=1.0)
                geo_count = [(k, s, 0, d, o) for k, s, _, d, o in geo]
                return total / _window(geo_count, jax.lax.add, ones, 0.0)
            return total / _window(geo, jax.lax.add, ones, 0.0)
        return _batched(pool, n)(x)
    return ref


def _adaptive_windows(L, o):
    return [((i * L) // o, -(-((i + 1) * L) // o)) for i in range(o)]


def _adaptive_ref(n, output_size, kind, return_indices=False):
    reduce = jnp.mean if kind == "avg" else jnp.max

    def ref(state, x, training):
        def pool(xb):
            spatial = xb.shape[2:]
            sizes = tuple(L if o is None else o for L, o in zip(spatial, _tup(output_size, n)))
            strides = [math.prod(spatial[i + 1:]) for i in range(n)]
            values, indices = [], []
            for box in itertools.product(*[_adaptive_windows(L, o) for L, o in zip(spatial, sizes)]):
                cell = xb[(Ellipsis,) + tuple(slice(a, b) for a, b in box)]
                flat = cell.reshape(cell.shape[:2] + (-1,))
                values.append(reduce(flat, axis=-1))
                local = jnp.unravel_index(jnp.argmax(flat, axis=-1), cell.shape[2:])
                indices.append(sum((a + i) * st for (a, _), i, st in zip(box, local, strides)))
            values = jnp.stack(values, -1).reshape(xb.shape[:2] + sizes)
            return (values, jnp.stack(indices, -1).reshape(values.shape)) if return_indices else values
        return _batched(pool, n)(x)
    return ref


def _pool_case(name, cls, args, kwargs, shape, ref):
    return LayerCase(name, lambda: getattr(nn, cls)(*args, **kwargs), _x(*shape),
                     lambda t: getattr(t.nn, cls)(*args, **kwargs), _jit(ref))


POOL_CASES = [
    _pool_case("MaxPool1d", "MaxPool1d", (3,), dict(stride=2, padding=1), (2, 3, 8),
               _max_pool_ref(1, 3, stride=2, padding=1)),
    _pool_case("MaxPool1d-dilated-ceil-indices-unbatched", "MaxPool1d", (2,),
               dict(dilation=2, ceil_mode=True, return_indices=True), (2, 8),
               _max_pool_ref(1, 2, dilation=2, ceil_mode=True, return_indices=True)),
    _pool_case("MaxPool2d-everything", "MaxPool2d", ((3, 2),),
               dict(stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True, return_indices=True), (1, 2, 8, 6),
               _max_pool_ref(2, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True,
                             return_indices=True)),
    _pool_case("AvgPool1d-ceil-excludepad", "AvgPool1d", (3,),
               dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 3, 8),
               _avg_pool_ref(1, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    _pool_case("AvgPool2d-ceil-includepad", "AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True),
               (1, 2, 6, 7), _avg_pool_ref(2, 3, stride=2, padding=1, ceil_mode=True)),
    _pool_case("AvgPool2d-divisor-unbatched", "AvgPool2d", ((2, 3),), dict(stride=(1, 2), divisor_override=4),
               (2, 5, 6), _avg_pool_ref(2, (2, 3), stride=(1, 2), divisor_override=4)),
    _pool_case("AvgPool2d-excludepad", "AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False),
               (1, 2, 5, 6), _avg_pool_ref(2, 3, stride=2, padding=1, count_include_pad=False)),
    _pool_case("AdaptiveAvgPool1d", "AdaptiveAvgPool1d", (3,), {}, (2, 3, 8), _adaptive_ref(1, 3, "avg")),
    _pool_case("AdaptiveAvgPool2d-None-unbatched", "AdaptiveAvgPool2d", ((3, None),), {}, (2, 7, 5),
               _adaptive_ref(2, (3, None), "avg")),
    _pool_case("AdaptiveMaxPool1d-indices", "AdaptiveMaxPool1d", (3,), dict(return_indices=True), (2, 2, 7),
               _adaptive_ref(1, 3, "max", return_indices=True)),
    _pool_case("AdaptiveMaxPool2d-indices-unbatched", "AdaptiveMaxPool2d", ((2, 3),), dict(return_indices=True),
               (2, 5, 7), _adaptive_ref(2, (2, 3), "max", return_indices=True)),
]


# -- upsampling --------------------------------------------------------------------------------------------
def _out_sizes(x, n, size, scale_factor):
    if size is not None:
        return _tup(size, n)
    return tuple(int(math.floor(L * s)) for L, s in zip(x.shape[2:], _tup(scale_factor, n)))


def _nearest_ref(n, size=None, scale_factor=None, exact=False):
    def ref(state, x, training):
        sizes = _out_sizes(x, n, size, scale_factor)
        for axis, (L, o) in enumerate(zip(x.shape[2:], sizes)):
            step = 1 / scale_factor if scale_factor is not None else L / o
            src = np.floor((np.arange(o) + (0.5 if exact else 0.0)) * step).astype(np.int64)
            x = jnp.take(x, np.minimum(src, L - 1), axis=axis + 2)
        return x
    return ref


def _linear_ref(n, size=None, scale_factor=None, align_corners=False):
    def ref(state, x, training):
        sizes = _out_sizes(x, n, size, scale_factor)
        spatial = x.shape[2:]
        if align_corners:
            scale = [(o - 1) / (L - 1) if o > 1 else 1.0 for L, o in zip(spatial, sizes)]
            shift = [0.5 - 0.5 * s for s in scale]
        else:
            scale = list(_tup(scale_factor, n)) if scale_factor is not None else [o / L for L, o in zip(spatial, sizes)]
            shift = [0.0] * n
        return jax.image.scale_and_translate(x, x.shape[:2] + sizes, tuple(range(2, n + 2)), jnp.array(scale),
                                             jnp.array(shift), method="linear", antialias=False, precision=HIGHEST)
    return ref


def _bicubic_ref(size=None, scale_factor=None, align_corners=False):
    """Keys' cubic convolution with torch's A = -0.75 and edge-clamped taps, by gathers."""
    a = -0.75

    def weights(t):
        def near(v):
            return ((a + 2) * v - (a + 3)) * v * v + 1

        def far(v):
            return a * v ** 3 - 5 * a * v ** 2 + 8 * a * v - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def ref(state, x, training):
        sizes = _out_sizes(x, 2, size, scale_factor)
        for axis, (L, o) in enumerate(zip(x.shape[2:], sizes)):
            dst = np.arange(o)
            if align_corners:
                src = dst * ((L - 1) / (o - 1)) if o > 1 else np.zeros(o)
            else:
                step = 1 / scale_factor if scale_factor is not None else L / o
                src = (dst + 0.5) * step - 0.5
            base = np.floor(src).astype(np.int64)
            shape = [1] * x.ndim
            shape[axis + 2] = o
            out = 0.0
            for j, w in enumerate(weights(src - base)):
                out = out + jnp.take(x, np.clip(base - 1 + j, 0, L - 1), axis=axis + 2) * w.reshape(shape)
            x = out
        return x
    return ref


def _up_case(name, cls, kwargs, shape, ref):
    return LayerCase(name, lambda: getattr(nn, cls)(**kwargs), _x(*shape), lambda t: getattr(t.nn, cls)(**kwargs),
                     _jit(ref))


UPSAMPLE_CASES = [
    _up_case("Upsample-nearest2d-x2", "Upsample", dict(scale_factor=2), (2, 3, 4, 5), _nearest_ref(2, scale_factor=2)),
    _up_case("Upsample-nearest1d-size", "Upsample", dict(size=7), (2, 3, 4), _nearest_ref(1, size=7)),
    _up_case("Upsample-nearest3d-size", "Upsample", dict(size=(3, 5, 2)), (1, 2, 2, 3, 3),
             _nearest_ref(3, size=(3, 5, 2))),
    _up_case("Upsample-nearest-exact", "Upsample", dict(size=(5, 7), mode="nearest-exact"), (1, 2, 3, 4),
             _nearest_ref(2, size=(5, 7), exact=True)),
    _up_case("Upsample-linear-1.5", "Upsample", dict(scale_factor=1.5, mode="linear"), (2, 2, 5),
             _linear_ref(1, scale_factor=1.5)),
    _up_case("Upsample-bilinear-x2", "Upsample", dict(scale_factor=2, mode="bilinear"), (1, 2, 3, 4),
             _linear_ref(2, scale_factor=2)),
    _up_case("Upsample-trilinear", "Upsample", dict(scale_factor=2, mode="trilinear"), (1, 1, 2, 3, 2),
             _linear_ref(3, scale_factor=2)),
    _up_case("Upsample-bicubic", "Upsample", dict(scale_factor=2, mode="bicubic"), (1, 2, 3, 4),
             _bicubic_ref(scale_factor=2)),
    _up_case("Upsample-bicubic-align", "Upsample", dict(size=(4, 6), mode="bicubic", align_corners=True),
             (1, 1, 3, 4), _bicubic_ref(size=(4, 6), align_corners=True)),
    _up_case("Upsample-area", "Upsample", dict(size=(2, 3), mode="area"), (1, 2, 5, 7),
             _adaptive_ref(2, (2, 3), "avg")),
    _up_case("UpsamplingBilinear2d-down", "UpsamplingBilinear2d", dict(size=(5, 3)), (1, 2, 3, 4),
             _linear_ref(2, size=(5, 3), align_corners=True)),
]

FLATTEN_CASES = [
    LayerCase("Flatten", nn.Flatten, _x(2, 3, 4), lambda t: t.nn.Flatten(),
              lambda state, x, training: x.reshape(2, 12)),
    LayerCase("Flatten-0-to--2", lambda: nn.Flatten(0, -2), _x(2, 3, 4, 2), lambda t: t.nn.Flatten(0, -2),
              lambda state, x, training: x.reshape(24, 2)),
    LayerCase("Unflatten", lambda: nn.Unflatten(1, (2, -1)), _x(3, 6, 2), lambda t: t.nn.Unflatten(1, (2, -1)),
              lambda state, x, training: x.reshape(3, 2, 3, 2)),
    LayerCase("Unflatten-last-list", lambda: nn.Unflatten(-1, [2, 2]), _x(3, 4), lambda t: t.nn.Unflatten(-1, [2, 2]),
              lambda state, x, training: x.reshape(3, 2, 2)),
]

CASES = CONV_CASES + POOL_CASES + UPSAMPLE_CASES + FLATTEN_CASES


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")  # torch's own warning
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


# -- construction, reprs and errors ---------------------------------------------------------------------------
def test_conv_default_init_follows_torch_bounds():
    fg.manual_seed(0)
    for layer, fan_in in [(nn.Conv2d(16, 8, 3), 16 * 9), (nn.ConvTranspose2d(16, 8, 3, groups=2), 4 * 9),
                          (nn.Conv1d(6, 42, 5, groups=3), 2 * 5)]:
        bound = 1 / math.sqrt(fan_in)
        w, b = layer.weight.numpy(), layer.bias.numpy()
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
        assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound  # U(-a, a) has std a / sqrt(3)
        assert np.abs(b).max() <= bound


def test_weight_shapes_and_factory_kwargs():
    assert nn.Conv2d(6, 4, (3, 2), groups=2).weight.shape == (4, 3, 3, 2)
    assert nn.ConvTranspose1d(6, 4, 3, groups=2).weight.shape == (6, 2, 3)
    conv = nn.ConvTranspose3d(2, 3, 2, bias=False, dtype=fg.float64)
    assert conv.weight.dtype == np.float64 and conv.bias is None
    assert [n for n, _ in conv.named_parameters()] == ["weight"]


def test_conv_transpose_output_size_with_batch_and_channel_dims():
    up = nn.ConvTranspose1d(2, 3, 3, stride=2)
    x = fg.ones(1, 2, 5)
    assert up(x, output_size=[1, 3, 12]).shape == (1, 3, 12)
    assert up(fg.ones(2, 5), output_size=(3, 11)).shape == (3, 11)
    with pytest.raises(ValueError, match=r"ConvTranspose1d: requested an output size of \[13\], but valid sizes "
                                         r"range from \[11\] to \[12\]"):
        up(x, output_size=[13])


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")

    def both(name, *args, **kwargs):
        return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)

    pairs = [
        both("Conv1d", 2, 4, 3), both("Conv2d", 3, 8, 3, padding=1), both("Conv2d", 2, 4, 3, padding="valid"),
        both("Conv2d", 4, 4, (3, 1), padding="same", groups=2, bias=False),
        both("Conv1d", 2, 4, 3, stride=2, padding=1, padding_mode="circular"),
        both("Conv3d", 1, 2, 2, dilation=(1, 2, 1)), both("ConvTranspose2d", 2, 4, 3, stride=2, output_padding=1),
        both("ConvTranspose1d", 2, 3, 3, dilation=2, padding=1, bias=False), both("ConvTranspose3d", 2, 2, 2),
        both("MaxPool1d", 3), both("MaxPool2d", (2, 3), stride=1, padding=1, dilation=2, ceil_mode=True),
        both("AvgPool1d", 3, stride=2, padding=1), both("AvgPool2d", 2, divisor_override=3),
        both("AvgPool2d", (2, 2), stride=(1, 1), count_include_pad=False),
        both("AdaptiveAvgPool1d", 3), both("AdaptiveAvgPool2d", (3, None)), both("AdaptiveMaxPool1d", 2),
        both("AdaptiveMaxPool2d", 4, return_indices=True),
        both("Upsample", scale_factor=2), both("Upsample", size=(3, 4), mode="bilinear", align_corners=True),
        both("Upsample", scale_factor=(2, 1.5), mode="bicubic"), both("UpsamplingNearest2d", scale_factor=2),
        both("UpsamplingBilinear2d", size=4),
        both("Flatten"), both("Flatten", 0, 2), both("Unflatten", 1, (2, 3)), both("Unflatten", -1, [2, 2]),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
    ours = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                 torch.nn.Flatten())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("build, x, error, match", [
    (lambda: nn.Conv2d(3, 8, 3), (2, 4, 5, 5), fg.OpError, r"Conv2d: expected input \(N, 3, H, W\) or \(3, H, W\) "
     r"with 3 channels in dim 1, got shape \(2, 4, 5, 5\)"),
    (lambda: nn.Conv2d(3, 8, 3), (5, 5), fg.OpError, r"Conv2d: expected a 3-D \(unbatched\) or 4-D \(batched\)"),
    (lambda: nn.ConvTranspose1d(3, 2, 3), (1, 2, 5), fg.OpError, "ConvTranspose1d: expected input .* 3 channels"),
    (lambda: nn.Conv3d(1, 1, 2), (4, 4), fg.OpError, r"Conv3d: expected a 4-D \(unbatched\) or 5-D"),
    (lambda: nn.Conv1d(1, 1, 5), (1, 1, 3), fg.OpError, r"the \(dilated\) kernel .* is larger than the padded"),
    (lambda: nn.MaxPool2d(2), (5,), fg.OpError, r"MaxPool2d: expected a 3-D \(unbatched\) or 4-D"),
    (lambda: nn.AvgPool1d(2), (1, 1, 2, 2), fg.OpError, r"AvgPool1d: expected a 2-D \(unbatched\) or 3-D"),
    (lambda: nn.AdaptiveMaxPool2d(2), (4,), fg.OpError, "AdaptiveMaxPool2d: expected a 3-D"),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 1, 4), fg.OpError,
     "Upsample: mode 'bilinear' expects a 4-D batched input"),
    (lambda: nn.Upsample(scale_factor=2), (1, 4), fg.OpError, "Upsample: mode 'nearest' expects a 3-D, 4-D or 5-D"),
    (lambda: nn.Flatten(2, 1), (2, 3, 4), fg.OpError, "Flatten: start_dim=2 comes after end_dim=1"),
    (lambda: nn.Flatten(3), (2, 3), IndexError, r"Flatten: start_dim=3 is out of range .* 2 dims"),
    (lambda: nn.Unflatten(1, (2, 2)), (2, 6), fg.OpError, r"unflatten: provided sizes \[2, 2\] don't multiply"),
])
def test_bad_inputs_name_the_layer(build, x, error, match):
    with pytest.raises(error, match=match):
        build()(fg.ones(x))


def test_non_tensor_and_integer_inputs():
    with pytest.raises(TypeError, match="Conv1d: expected an fgraph Tensor as input, got ndarray"):
        nn.Conv1d(1, 1, 2)(np.ones((1, 1, 4)))
    with pytest.raises(fg.OpError, match="conv1d: 'input' must be a floating-point tensor"):
        nn.Conv1d(1, 1, 2)(fg.ones((1, 1, 4), dtype=fg.int32))


@pytest.mark.parametrize("build, error, match", [
    (lambda: nn.Conv1d(3, 4, 3, groups=2), ValueError, r"Conv1d: in_channels \(3\) must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, r"Conv2d: out_channels \(3\) must be divisible by groups"),
    (lambda: nn.Conv2d(0, 3, 3), ValueError, "Conv2d: in_channels must be a positive integer, got 0"),
    (lambda: nn.Conv2d(2, 3, 3, stride=2, padding="same"), ValueError, "Conv2d: padding='same' is not supported for "
     "strided"),
    (lambda: nn.Conv2d(2, 3, 3, padding="full"), ValueError, "Conv2d: invalid padding string 'full'"),
    (lambda: nn.Conv1d(2, 3, 3, padding=-1), ValueError, r"Conv1d: padding \(-1,\) must be non-negative"),
    (lambda: nn.Conv2d(2, 3, (3, 3, 3)), fg.OpError, "Conv2d: 'kernel_size' must be an int or a tuple of 2 ints"),
    (lambda: nn.Conv2d(2, 3, 0), ValueError, r"Conv2d: kernel_size \(0, 0\), stride .* must be positive"),
    (lambda: nn.Conv1d(2, 3, 3, padding_mode="mirror"), ValueError, "Conv1d: padding_mode must be one of"),
    (lambda: nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
    (lambda: nn.ConvTranspose1d(2, 3, 3, output_padding=1), ValueError,
     r"ConvTranspose1d: output_padding \(1,\) must be non-negative and smaller than either stride"),
    (lambda: nn.MaxPool2d(3, padding=2), fg.OpError, r"MaxPool2d: padding \(2, 2\) should be at most half"),
    (lambda: nn.AvgPool1d(0), fg.OpError, "AvgPool1d: kernel_size .* must be positive"),
    (lambda: nn.AvgPool2d(2, divisor_override=0), ValueError, "AvgPool2d: divisor_override must be a positive int"),
    (lambda: nn.AdaptiveAvgPool2d((0, 2)), ValueError, "AdaptiveAvgPool2d: output_size must be a positive int"),
    (lambda: nn.Upsample(), ValueError, "Upsample: pass exactly one of size and scale_factor"),
    (lambda: nn.Upsample(scale_factor=2, align_corners=True), ValueError, "Upsample: align_corners can only be set"),
    (lambda: nn.Upsample(scale_factor=2, mode="cubic"), ValueError, "Upsample: mode 'cubic' is not supported"),
    (lambda: nn.Unflatten(1, 6), TypeError, "Unflatten: unflattened_size must be a tuple of ints, but found type int"),
    (lambda: nn.Unflatten(1, (2, 3.0)), TypeError, "found element of type float at pos 1"),
])
def test_bad_arguments_fail_at_construction(build, error, match):
    with pytest.raises(error, match=match):
        build()
