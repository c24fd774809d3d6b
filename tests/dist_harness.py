"""Shared checks for fgraph.distributions: torch as oracle, sample statistics, pathwise gradients.

Every distribution test module drives these with its own cases:

* :func:`compare_with_torch` builds the same distribution in both libraries from float64
  parameters and compares values *and* gradients (to every parameter) of ``log_prob``,
  ``entropy``, ``cdf``, ``icdf``, ``mean``, ``mode``, ``variance``, ``stddev``, plus shapes and
  ``has_rsample``; optionally a second-order check (the gradient of a gradient).
* :func:`check_moments` / :func:`check_ks` test samples against the distribution's own moments or
  a CDF, with bounds in standard errors (fixed keys: a failure reproduces).
* :func:`check_pathwise_gradients` compares the Monte Carlo gradient of ``E[x]`` and ``E[x**2]`` through
  ``rsample`` with the gradient of the closed-form moments.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import jax
import numpy as np

import fgraph as fg

VALUE_METHODS = ("log_prob", "cdf", "icdf")
PROPERTIES = ("mean", "mode", "variance", "stddev")


def fg_params(params: dict, requires_grad: bool = True) -> dict:
    out = {}
    for k, v in params.items():
        a = np.asarray(v)
        floating = a.dtype.kind == "f"
        out[k] = fg.tensor(a, dtype=fg.float64 if floating else None, requires_grad=requires_grad and floating)
    return out


def torch_params(params: dict, requires_grad: bool = True) -> dict:
    import torch

    out = {}
    for k, v in params.items():
        a = np.asarray(v)
        if a.dtype.kind == "f":
            out[k] = torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
        else:
            out[k] = torch.tensor(a)
    return out


def _np(t: Any) -> np.ndarray:
    if hasattr(t, "detach") and hasattr(t, "numpy") and not isinstance(t, fg.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


def _outputs(dist: Any, value: Any, methods: Sequence[str]) -> dict:
    out = {}
    for m in methods:
        try:
            out[m] = getattr(dist, m)(value) if m in VALUE_METHODS else (
                dist.entropy() if m == "entropy" else getattr(dist, m))
        except NotImplementedError:
            out[m] = NotImplemented
    return out


def compare_with_torch(fg_factory: Callable, torch_factory: Callable, params: dict, value: Any = None, *,
                       methods: Sequence[str] = ("log_prob", "entropy", "cdf", "icdf", "mean", "mode", "variance",
                                                 "stddev"),
                       rtol: float = 1e-9, atol: float = 1e-9, grad: bool = True, second_order: bool = False,
                       value_grad: bool = False) -> None:
    """Build ``fg_factory(**params)`` and ``torch_factory(**params)`` (float64) and compare them.

    ``value`` is what ``log_prob``/``cdf``/``icdf`` are given (``icdf`` gets ``value`` too, so pass a
    probability when only ``icdf`` is listed, or list it in its own call). A method torch does not
    implement must raise ``NotImplementedError`` in fgraph too. ``value_grad`` also differentiates
    with respect to ``value``.
    """
    import torch

    fp, tp = fg_params(params), torch_params(params)
    fd, td = fg_factory(**fp), torch_factory(**tp)
    assert tuple(fd.batch_shape) == tuple(td.batch_shape), (fd.batch_shape, td.batch_shape)
    assert tuple(fd.event_shape) == tuple(td.event_shape), (fd.event_shape, td.event_shape)
    assert fd.has_rsample == td.has_rsample
    assert fd.has_enumerate_support == td.has_enumerate_support
    fv = tv = None
    if value is not None:
        a = np.asarray(value)
        fv = fg.tensor(a, dtype=fg.float64 if a.dtype.kind == "f" else None, requires_grad=value_grad)
        tv = torch.tensor(a, dtype=torch.float64 if a.dtype.kind == "f" else None, requires_grad=value_grad)
    f_out, t_out = _outputs(fd, fv, methods), _outputs(td, tv, methods)
    f_inputs = [t for t in fp.values() if t.requires_grad] + ([fv] if value_grad else [])
    t_inputs = [t for t in tp.values() if t.requires_grad] + ([tv] if value_grad else [])
    for m in methods:
        if t_out[m] is NotImplemented:
            assert f_out[m] is NotImplemented, f"{m}: torch does not implement it, fgraph returned {f_out[m]}"
            continue
        assert f_out[m] is not NotImplemented, f"{m}: torch implements it, fgraph raised NotImplementedError"
        fo, to = f_out[m], t_out[m]
        assert tuple(fo.shape) == tuple(to.shape), f"{m}: shape {fo.shape} vs torch {tuple(to.shape)}"
        np.testing.assert_allclose(_np(fo), _np(to), rtol=rtol, atol=atol, err_msg=f"{m} value")
        if not grad or not to.requires_grad or not fo.requires_grad:
            continue
        weights = np.linspace(0.5, 1.5, max(int(np.prod(to.shape)), 1)).reshape(tuple(to.shape))
        f_w, t_w = fg.tensor(weights, dtype=fg.float64), torch.tensor(weights, dtype=torch.float64)
        fg_grads = fg.grad((fo * f_w).sum(), f_inputs, allow_unused=True, materialize_grads=True,
                           create_graph=second_order)
        t_grads = torch.autograd.grad((to * t_w).sum(), t_inputs, allow_unused=True, materialize_grads=True,
                                      create_graph=second_order, retain_graph=True)
        for i, (fgi, tgi) in enumerate(zip(fg_grads, t_grads)):
            np.testing.assert_allclose(_np(fgi), _np(tgi), rtol=rtol * 10, atol=atol * 10,
                                       err_msg=f"{m}: gradient of input {i}")
        f_sq = sum((g * g).sum() for g in fg_grads)
        t_sq = sum((g * g).sum() for g in t_grads)
        if second_order and t_sq.requires_grad:
            assert f_sq.requires_grad, f"{m}: torch's gradient is differentiable, fgraph's is not"
            f_gg = fg.grad(f_sq, f_inputs, allow_unused=True, materialize_grads=True)
            t_gg = torch.autograd.grad(t_sq, t_inputs, allow_unused=True, materialize_grads=True, retain_graph=True)
            for i, (fgi, tgi) in enumerate(zip(f_gg, t_gg)):
                np.testing.assert_allclose(_np(fgi), _np(tgi), rtol=rtol * 100, atol=atol * 100,
                                           err_msg=f"{m}: second-order gradient of input {i}")


def draw(dist: Any, n: int, seed: int = 0, rsample: bool = False) -> np.ndarray:
    """``n`` draws (``(n,) + batch_shape + event_shape``) with a fixed key, as a float64 NumPy array."""
    fn = dist.rsample if rsample else dist.sample
    return np.asarray(fn((n,), key=jax.random.key(seed)), dtype=np.float64)


def check_moments(dist: Any, n: int = 20000, seed: int = 0, sigmas: float = 5.0, variance: bool = True) -> None:
    """Sample mean (and variance) within ``sigmas`` standard errors of ``dist.mean`` (``dist.variance``)."""
    x = draw(dist, n, seed)
    mean, var = np.asarray(dist.mean, dtype=np.float64), np.asarray(dist.variance, dtype=np.float64)
    se_mean = np.sqrt(var / n)
    err = np.abs(x.mean(0) - mean)
    assert np.all(err <= sigmas * se_mean + 1e-12), f"sample mean {x.mean(0)} vs {mean} (se {se_mean})"
    if variance:
        m4 = ((x - x.mean(0)) ** 4).mean(0)
        se_var = np.sqrt(np.maximum(m4 - var ** 2, 0) / n)
        err = np.abs(x.var(0) - var)
        assert np.all(err <= sigmas * se_var + 1e-12), f"sample variance {x.var(0)} vs {var} (se {se_var})"


def check_ks(samples: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], alpha_coef: float = 1.95) -> None:
    """One-sample Kolmogorov-Smirnov bound (``1.95 / sqrt(n)``: alpha = 0.001) for 1-d ``samples``."""
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    n = x.size
    f = np.asarray(cdf(x), dtype=np.float64)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(0, n) / n))
    assert d < alpha_coef / math.sqrt(n), f"KS statistic {d:.4f} >= {alpha_coef / math.sqrt(n):.4f} (n={n})"


def check_frequencies(samples: np.ndarray, probs: np.ndarray, sigmas: float = 5.0) -> None:
    """Counts of each of ``len(probs)`` categories within ``sigmas`` binomial standard errors."""
    x = np.asarray(samples).ravel().astype(np.int64)
    n = x.size
    counts = np.bincount(x, minlength=len(probs))[: len(probs)]
    se = np.sqrt(n * probs * (1 - probs))
    assert np.all(np.abs(counts - n * probs) <= sigmas * se + 1e-9), f"counts {counts} vs expected {n * probs}"


def check_pathwise_gradients(factory: Callable, params: dict, n: int = 20000, seed: int = 0,
                             sigmas: float = 6.0, second_moment: bool = True) -> None:
    """MC gradients of ``E[x]`` (and ``E[x^2]``) through ``rsample`` against the closed-form moments' gradients.

    Each of the ``n`` draws gets its own copy of every parameter (the parameters are replicated along
    a new leading batch dim), so one backward pass gives every draw's own gradient: their mean is the
    Monte Carlo estimate and their spread its standard error. The tolerance is ``sigmas`` standard errors.
    """
    fp = fg_params(params)
    inputs = [k for k, t in fp.items() if t.requires_grad]
    replicated = {k: (fg.tensor(np.broadcast_to(np.asarray(v), (n,) + np.shape(v)).copy(), dtype=fp[k].dtype,
                                requires_grad=True) if k in inputs else fp[k]) for k, v in params.items()}
    exact_dist = factory(**fp)
    x = factory(**replicated).rsample(key=jax.random.key(seed))
    targets = [("E[x]", x, exact_dist.mean)]
    if second_moment:
        targets.append(("E[x^2]", x * x, exact_dist.variance + exact_dist.mean * exact_dist.mean))
    for name, per_sample, exact in targets:
        per_draw = fg.grad(per_sample.sum(), [replicated[k] for k in inputs], allow_unused=True,
                           materialize_grads=True)
        exact_grads = fg.grad(exact.sum(), [fp[k] for k in inputs], allow_unused=True, materialize_grads=True)
        for k, g, eg in zip(inputs, per_draw, exact_grads):
            g = np.asarray(g, dtype=np.float64)
            mc, se = g.mean(0), g.std(0) / math.sqrt(n)
            eg = np.asarray(eg, dtype=np.float64)
            err = np.abs(mc - eg)
            assert np.all(err <= sigmas * se + 1e-6 * (1 + np.abs(eg))), \
                f"{name}: pathwise gradient of {k}: MC {mc} vs exact {eg} (se {se})"
