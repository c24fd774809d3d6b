"""``torch.special``'s ``bessel_j0``, ``bessel_j1`` (Bessel functions of the first kind) and ``erfcx``.

``bessel_j0``/``bessel_j1`` are Cephes' rational approximations (``|x| <= 5``) and
Hankel asymptotic forms (``|x| > 5``), the same as PyTorch's, with Cephes' monic
denominators (PyTorch's port drops their leading 1 and is off by up to ~1e-8 in float64;
fgraph agrees with SciPy to a few ulps). Unlike PyTorch, which has no derivative for
them, both are differentiable: ``J0' = -J1`` and ``J1' = J0 - J1 / x`` (``1/2`` at 0).

``erfcx(x) = exp(x**2) * erfc(x)`` is computed directly for ``x < 3`` and by the continued
fraction of ``erfc`` (32 terms, full float64 precision there) for ``x >= 3``, so it
stays finite and accurate for large ``x`` (``erfcx(x) ~ 1 / (x sqrt(pi))``) where
``exp(x**2)`` overflows. Its derivative is ``2 x erfcx(x) - 2 / sqrt(pi)``.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.0], requires_grad=True)
    >>> fg.special.bessel_j0(x).round(decimals=6).tolist(), fg.grad(fg.special.bessel_j1(x).sum(), [x])[0].tolist()
    ([1.0], [0.5])
    >>> round(fg.special.erfcx(fg.tensor([1e4])).item() * 1e4 * 3.141592653589793 ** 0.5, 6)
    1.0
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import jax.scipy.special as jsp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops._math_helpers import float_unary, operand_hint
from fgraph.ops.elementwise import abs, lt, where
from fgraph.tensor import Tensor, type_name

_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# Cephes j0.c / j1.c coefficients (highest degree first); the denominators ``RQ`` and ``QQ`` are monic.
_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01)
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (1.0, 6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02)
_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15)
_J0_RQ = (1.0, 4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18)
_J0_ZEROS_SQ = (5.78318596294678452118e+00, 3.04712623436620863991e+01)

_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00)
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01)
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (1.0, 7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15)
_J1_RQ = (1.0, 6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18)
_J1_ZEROS_SQ = (1.46819706421238932572e+01, 4.92184563216946036703e+01)


def _polyval(coeffs, z):
    out = jnp.zeros_like(z)
    for c in coeffs:
        out = out * z + c
    return out


def _hankel(x, pp, pq, qp, qq, shift):
    """``sqrt(2 / (pi x)) (P cos(x - shift) - (5 / x) Q sin(x - shift))`` for ``x > 5`` (Cephes)."""
    z = 25.0 / (x * x)
    p = _polyval(pp, z) / _polyval(pq, z)
    q = _polyval(qp, z) / _polyval(qq, z)
    xn = x - shift
    return (p * jnp.cos(xn) - 5.0 / x * q * jnp.sin(xn)) * _SQRT_2_OVER_PI / jnp.sqrt(x)


def _j0_forward(x):
    ax = jnp.abs(x)
    big = ax > 5.0
    small_x = jnp.where(big, 1.0, ax).astype(x.dtype)
    z = small_x * small_x
    near = (z - _J0_ZEROS_SQ[0]) * (z - _J0_ZEROS_SQ[1]) * _polyval(_J0_RP, z) / _polyval(_J0_RQ, z)
    far = _hankel(jnp.where(big, ax, 6.0).astype(x.dtype), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, math.pi / 4)
    return jnp.where(big, far, near).astype(x.dtype)


def _j1_forward(x):
    ax = jnp.abs(x)
    big = ax > 5.0
    small_x = jnp.where(big, 1.0, ax).astype(x.dtype)
    z = small_x * small_x
    near = _polyval(_J1_RP, z) / _polyval(_J1_RQ, z) * small_x * (z - _J1_ZEROS_SQ[0]) * (z - _J1_ZEROS_SQ[1])
    far = _hankel(jnp.where(big, ax, 6.0).astype(x.dtype), _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, 3 * math.pi / 4)
    return (jnp.sign(x) * jnp.where(big, far, near)).astype(x.dtype)


_CF_TERMS = 32
_J1_SERIES_BELOW = 0.1  # J1'(x) = 1/2 - 3x^2/16 + 5x^4/384 - 7x^6/18432 + O(x^8)
_CF_FROM = 3.0


def _erfcx_forward(x):
    # x >= 3: erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated bottom-up.
    big = x >= _CF_FROM
    xb = jnp.where(big, x, _CF_FROM).astype(x.dtype)
    k = xb
    for n in range(_CF_TERMS, 0, -1):
        k = xb + (n / 2.0) / k
    far = _INV_SQRT_PI / k
    xs = jnp.where(big, 0.0, x).astype(x.dtype)
    near = jnp.exp(xs * xs) * jsp.erfc(xs)
    return jnp.where(big, far, near).astype(x.dtype)


def _j0_rule(ctx, g):
    return (-g * bessel_j1(ctx.inputs[0]),)


def _j1_rule(ctx, g):
    x = ctx.inputs[0]
    # J0 - J1/x cancels near 0 (and its derivative, -J1'/x... , blows up): the series there instead.
    small = lt(abs(x), _J1_SERIES_BELOW)
    safe = where(small, 1.0, x)
    x2 = x * x
    series = (x2 * (x2 * (x2 * (-7.0 / 18432.0) + 5.0 / 384.0) - 3.0 / 16.0)) + 0.5
    return (g * where(small, series, bessel_j0(x) - bessel_j1(safe) / safe),)


def _erfcx_rule(ctx, g):
    return (g * (ctx.inputs[0] * ctx.result * 2.0 - 2.0 * _INV_SQRT_PI),)


BESSEL_J0 = declare("bessel_j0", float_unary(_j0_forward, "bessel_j0"), _j0_rule, save_inputs=True,
                    hint=operand_hint, node_name="SpecialBesselJ0Backward0", real_only=True, tangent="rule")
BESSEL_J1 = declare("bessel_j1", float_unary(_j1_forward, "bessel_j1"), _j1_rule, save_inputs=True,
                    hint=operand_hint, node_name="SpecialBesselJ1Backward0", real_only=True, tangent="rule")
ERFCX = declare("erfcx", float_unary(_erfcx_forward, "erfcx"), _erfcx_rule, save_inputs=True, save_result=True,
                hint=operand_hint, node_name="SpecialErfcxBackward0", real_only=True)


def _check_tensor(input: object, op: str) -> None:
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor as input, got {type_name(input)}; wrap it with fgraph.tensor(...).")


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0 (differentiable: ``J0' = -J1``).

    Example:
        >>> import fgraph as fg
        >>> round(fg.special.bessel_j0(fg.tensor([2.404825557695773])).item(), 6)   # its first zero
        0.0
    """
    _check_tensor(input, "bessel_j0")
    return apply_unary(BESSEL_J0, input)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1 (odd; ``J1' = J0 - J1 / x``).

    Example:
        >>> import fgraph as fg
        >>> [round(v, 6) for v in fg.special.bessel_j1(fg.tensor([1.0, -1.0])).tolist()]
        [0.440051, -0.440051]
    """
    _check_tensor(input, "bessel_j1")
    return apply_unary(BESSEL_J1, input)


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(x**2) * erfc(x)``, finite for large ``x``.

    Example:
        >>> import fgraph as fg
        >>> fg.special.erfcx(fg.tensor([0.0, -30.0])).tolist()
        [1.0, inf]
        >>> round(fg.special.erfcx(fg.tensor([30.0])).item(), 6)
        0.018796
    """
    _check_tensor(input, "erfcx")
    return apply_unary(ERFCX, input)


#: Exported as ``fgraph.<name>``: none (``torch.special`` only).
__all__: list = []
#: Every function of this module, for ``fgraph.special``.
SPECIAL = ["bessel_j0", "bessel_j1", "erfcx"]
#: Installed as ``Tensor.<name>`` methods: none (PyTorch has none for these).
TENSOR_METHODS: dict = {}
