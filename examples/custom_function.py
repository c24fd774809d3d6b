"""A custom autograd Function: numerically stable log-sum-exp with a hand-written backward.

The forward is plain JAX (max-shifted, so exp never overflows); the backward is
written in fgraph ops -- grad * softmax(x) -- so differentiating it again
(``create_graph=True``) gives the Hessian for free. The script checks:

1. the gradient against central finite differences (float64),
2. the gradient against ``jax.grad(jax.scipy.special.logsumexp)``,
3. the Hessian (differentiating twice) against ``jax.hessian``,
4. that large inputs (1000s) stay finite where the naive formula overflows.

Run: python examples/custom_function.py
"""
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.scipy.special import logsumexp as jax_logsumexp  # noqa: E402

import fgraph as fg  # noqa: E402


class LogSumExp(fg.autograd.Function):
    """``log(sum(exp(x), dim))``, computed as ``m + log(sum(exp(x - m)))`` with ``m = max(x)``."""

    @staticmethod
    def forward(ctx, x, dim=-1):
        data = x.array
        m = jnp.max(data, axis=dim, keepdims=True)
        out = jnp.squeeze(m, axis=dim) + jnp.log(jnp.sum(jnp.exp(data - m), axis=dim))
        result = fg.tensor(out)
        ctx.dim = dim
        ctx.save_for_backward(x, result)  # a saved output: double backward flows through this node
        return result

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        softmax = fg.exp(x - fg.unsqueeze(out, ctx.dim))  # stable: x - logsumexp(x) <= 0
        return fg.unsqueeze(grad, ctx.dim) * softmax, None


def logsumexp(x, dim=-1):
    """Log-sum-exp over ``dim`` as a recorded graph node (``LogSumExpBackward``)."""
    return LogSumExp.apply(x, dim)


def finite_difference_grad(f, x0, eps=1e-6):
    """Central differences of a scalar function ``f(np.ndarray) -> float``, one coordinate at a time."""
    grad = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        step = np.zeros_like(x0)
        step[i] = eps
        grad[i] = (f(x0 + step) - f(x0 - step)) / (2 * eps)
    return grad


def max_error(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def main():
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(3, 4))
    weights = rng.normal(size=(3,))  # a weighted sum makes the loss depend on each row differently

    def loss_fg(x):
        return (logsumexp(x, dim=1) * fg.tensor(weights)).sum()

    x = fg.tensor(x0, requires_grad=True)
    y = loss_fg(x)
    print(f"graph: {y.grad_fn.name()} <- {y.grad_fn.next_functions[0][0].name()} <- "
          f"{y.grad_fn.next_functions[0][0].next_functions[0][0].name()}")

    (g,) = fg.grad(y, [x], create_graph=True)
    fd = finite_difference_grad(lambda a: loss_fg(fg.tensor(a)).item(), x0)
    reference = jax.grad(lambda a: jnp.sum(jax_logsumexp(a, axis=1) * weights))(x0)
    err_fd, err_jax = max_error(g.array, fd), max_error(g.array, reference)
    print(f"gradient vs central differences: max |error| = {err_fd:.2e}")
    print(f"gradient vs jax.grad(logsumexp): max |error| = {err_jax:.2e}")

    # Hessian: differentiate each entry of the gradient again (create_graph=True above).
    flat = fg.reshape(g, (-1,))
    rows = [fg.reshape(fg.grad(flat[i], [x])[0], (-1,)).numpy() for i in range(x0.size)]
    hessian = np.stack(rows).reshape(x0.shape + x0.shape)
    ref_hessian = jax.hessian(lambda a: jnp.sum(jax_logsumexp(a, axis=1) * weights))(x0)
    err_hess = max_error(hessian, ref_hessian)
    print(f"Hessian (double backward) vs jax.hessian: max |error| = {err_hess:.2e}")

    big = fg.tensor([[1000.0, 1001.0, 999.0]], dtype=fg.float64, requires_grad=True)
    (g_big,) = fg.grad(logsumexp(big).sum(), [big])
    with np.errstate(over="ignore"):
        naive = np.log(np.sum(np.exp(np.array([1000.0, 1001.0, 999.0]))))
    stable = logsumexp(big).item()
    print(f"large inputs: ours {stable:.6f}, naive {naive}; gradient sums to {g_big.sum().item():.6f}")

    ok = err_fd < 1e-7 and err_jax < 1e-12 and err_hess < 1e-12 and np.isfinite(stable)
    ok = ok and abs(g_big.sum().item() - 1.0) < 1e-12
    print("all checks passed" if ok else "CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
