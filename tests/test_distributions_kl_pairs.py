"""Every KL pair torch registers, among the distributions fgraph has, against torch (float64): values and the
gradients with respect to every parameter of both sides. Also: every such pair is registered here."""
import numpy as np
import pytest

import fgraph as fg
import fgraph.distributions as fd

# Two parameter sets per distribution (p from the first, q from the second), batch shape (3,).
PARAMS = {
    "Normal": ({"loc": [0.3, -0.2, 1.0], "scale": [0.7, 1.2, 2.0]}, {"loc": [0.0, 0.5, -1.0], "scale": [1.0, 0.8, 1.5]}),
    "Laplace": ({"loc": [0.3, -0.2, 1.0], "scale": [0.7, 1.2, 2.0]}, {"loc": [0.1, 0.5, -1.0], "scale": [1.0, 0.8, 1.5]}),
    "Cauchy": ({"loc": [0.3, -0.2, 1.0], "scale": [0.7, 1.2, 2.0]}, {"loc": [0.1, 0.5, -1.0], "scale": [1.0, 0.8, 1.5]}),
    "Gumbel": ({"loc": [0.3, -0.2, 1.0], "scale": [0.7, 1.2, 2.0]}, {"loc": [0.1, 0.5, -1.0], "scale": [1.0, 0.8, 1.5]}),
    "HalfNormal": ({"scale": [0.7, 1.2, 2.0]}, {"scale": [1.0, 0.8, 1.5]}),
    "Exponential": ({"rate": [0.7, 1.2, 2.0]}, {"rate": [1.0, 0.8, 1.5]}),
    "Gamma": ({"concentration": [0.7, 1.2, 2.0], "rate": [1.5, 0.6, 1.0]},
              {"concentration": [1.0, 2.5, 1.5], "rate": [0.9, 1.1, 2.0]}),
    "Beta": ({"concentration1": [1.5, 2.0, 0.7], "concentration0": [2.0, 0.8, 3.0]},
             {"concentration1": [1.2, 0.9, 2.5], "concentration0": [1.1, 2.2, 0.6]}),
    "Uniform": ({"low": [0.1, 0.2, 0.3], "high": [0.6, 0.7, 0.9]}, {"low": [0.0, -1.0, 0.05], "high": [1.0, 2.0, 0.95]}),
    "Pareto": ({"scale": [1.0, 1.5, 2.0], "alpha": [2.5, 3.0, 4.0]}, {"scale": [0.5, 1.0, 1.5], "alpha": [1.5, 2.0, 3.5]}),
    "ContinuousBernoulli": ({"probs": [0.2, 0.45, 0.7]}, {"probs": [0.6, 0.3, 0.85]}),
    "Bernoulli": ({"probs": [0.2, 0.45, 0.7]}, {"probs": [0.6, 0.3, 0.85]}),
    "Geometric": ({"probs": [0.2, 0.45, 0.7]}, {"probs": [0.6, 0.3, 0.85]}),
    "Poisson": ({"rate": [0.7, 1.2, 2.0]}, {"rate": [1.0, 0.8, 1.5]}),
    "Binomial": ({"total_count": 5.0, "probs": [0.2, 0.45, 0.7]}, {"total_count": 5.0, "probs": [0.6, 0.3, 0.85]}),
    "Categorical": ({"probs": [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]]},
                    {"probs": [[0.3, 0.3, 0.4], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]}),
    "OneHotCategorical": ({"probs": [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]]},
                          {"probs": [[0.3, 0.3, 0.4], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]}),
    "Dirichlet": ({"concentration": [[1.5, 0.7, 2.0], [0.9, 1.1, 3.0], [2.0, 2.0, 2.0]]},
                  {"concentration": [[1.0, 1.0, 1.0], [2.0, 0.5, 1.5], [0.8, 1.9, 2.2]]}),
    "MultivariateNormal": ({"loc": [[0.3, -0.2], [1.0, 0.0], [0.5, 0.5]],
                            "scale_tril": [[[1.0, 0.0], [0.3, 0.8]], [[0.6, 0.0], [-0.2, 1.1]], [[1.5, 0.0], [0.0, 0.5]]]},
                           {"loc": [[0.0, 0.5], [-1.0, 0.2], [0.1, 0.0]],
                            "scale_tril": [[[0.9, 0.0], [0.1, 1.2]], [[1.0, 0.0], [0.4, 0.7]], [[0.8, 0.0], [-0.3, 0.9]]]}),
    "LowRankMultivariateNormal": ({"loc": [[0.3, -0.2], [1.0, 0.0], [0.5, 0.5]],
                                   "cov_factor": [[[0.5], [0.2]], [[0.1], [-0.4]], [[0.3], [0.3]]],
                                   "cov_diag": [[1.0, 0.7], [0.6, 1.1], [1.5, 0.5]]},
                                  {"loc": [[0.0, 0.5], [-1.0, 0.2], [0.1, 0.0]],
                                   "cov_factor": [[[0.2], [-0.1]], [[0.6], [0.1]], [[0.0], [0.5]]],
                                   "cov_diag": [[0.9, 1.2], [1.0, 0.7], [0.8, 0.9]]}),
}
# Wrappers built on a base distribution, the name torch registers them under, and how to build them.
WRAPPED = {
    "Independent": lambda lib, params: lib.Independent(lib.Normal(**params), 1),
    "TransformedDistribution": lambda lib, params: lib.LogNormal(**params),
}
SKIPPED = {("ExponentialFamily", "ExponentialFamily")}  # abstract: exercised through the concrete families


def _torch_pairs():
    torch = pytest.importorskip("torch")
    return sorted((a.__name__, b.__name__) for a, b in torch.distributions.kl._KL_REGISTRY), torch


def _build(lib_name, name, params, lib, as_tensor):
    tensors = {k: as_tensor(v) for k, v in params.items()}
    if name in WRAPPED:
        return WRAPPED[name](lib, tensors), list(tensors.values())
    return getattr(lib, name)(**tensors), list(tensors.values())


def test_every_torch_pair_is_registered():
    pairs, _ = _torch_pairs()
    have = {n for n in dir(fd) if isinstance(getattr(fd, n), type)}
    missing = [(p, q) for p, q in pairs if p in have and q in have and (p, q) not in SKIPPED
               and fd.kl._dispatch_kl(getattr(fd, p), getattr(fd, q)) is NotImplemented]
    assert not missing, f"torch registers these KL pairs, fgraph does not: {missing}"


def _pairs_to_check():
    try:
        import torch  # noqa: F401
    except ImportError:
        return []
    pairs = sorted((a.__name__, b.__name__) for a, b in __import__("torch").distributions.kl._KL_REGISTRY)
    params = {**PARAMS, "Independent": PARAMS["Normal"],
              "TransformedDistribution": ({"loc": [0.3, -0.2, 1.0], "scale": [0.7, 1.2, 2.0]},
                                          {"loc": [0.0, 0.5, -1.0], "scale": [1.0, 0.8, 1.5]})}
    return [(p, q, params[p][0], params[q][1]) for p, q in pairs if p in params and q in params and hasattr(fd, p)
            and hasattr(fd, q)]


@pytest.mark.parametrize("p_name,q_name,p_params,q_params", _pairs_to_check(),
                         ids=[f"{p}-{q}" for p, q, _, _ in _pairs_to_check()])
def test_kl_pair_equals_torch(p_name, q_name, p_params, q_params):
    _, torch = _torch_pairs()
    td = torch.distributions

    def fg_tensor(v):
        return fg.tensor(np.asarray(v, dtype=np.float64), requires_grad=np.ndim(v) > 0)

    def torch_tensor(v):
        return torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=np.ndim(v) > 0)

    p, fp = _build("fg", p_name, p_params, fd, fg_tensor)
    q, fq = _build("fg", q_name, q_params, fd, fg_tensor)
    tp, tpp = _build("torch", p_name, p_params, td, torch_tensor)
    tq, tqq = _build("torch", q_name, q_params, td, torch_tensor)
    kl, tkl = fd.kl_divergence(p, q), td.kl_divergence(tp, tq)
    assert tuple(kl.shape) == tuple(tkl.shape)
    np.testing.assert_allclose(np.asarray(kl), tkl.detach().numpy(), rtol=1e-9, atol=1e-12)
    finite = np.isfinite(tkl.detach().numpy())
    inputs = [t for t in fp + fq if t.requires_grad]
    t_inputs = [t for t in tpp + tqq if t.requires_grad]
    if not finite.any() or not tkl.requires_grad:
        return
    weights = np.where(finite, 1.0, 0.0)
    loss = fg.where(fg.tensor(finite), kl, fg.zeros_like(kl)) * fg.tensor(weights)
    t_loss = torch.where(torch.tensor(finite), tkl, torch.zeros_like(tkl)) * torch.tensor(weights)
    grads = fg.grad(loss.sum(), inputs, allow_unused=True, materialize_grads=True)
    t_grads = torch.autograd.grad(t_loss.sum(), t_inputs, allow_unused=True, materialize_grads=True)
    for i, (g, tg) in enumerate(zip(grads, t_grads)):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-8, atol=1e-10, err_msg=f"gradient {i}")
