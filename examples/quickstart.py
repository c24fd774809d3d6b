"""fgraph in five minutes: gradients, the recorded graph, higher derivatives, and a check against JAX.

Run: python examples/quickstart.py
"""
import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg


def show_graph(root, names):
    """Print the backward graph below ``root`` as an indented tree (iterative walk, no recursion)."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        label = node.name()
        variable = getattr(node, "variable", None)  # AccumulateGrad knows its leaf
        if variable is not None:
            label += f"  ({names.get(id(variable), 'leaf')})"
        print("    " + "  " * depth + label)
        children = [fn for fn, _ in node.next_functions if fn is not None]
        stack.extend((child, depth + 1) for child in reversed(children))


def side_by_side(label, ours, theirs):
    ours = [np.asarray(g.array if isinstance(g, fg.Tensor) else g) for g in ours]
    theirs = [np.asarray(g) for g in theirs]
    print(f"  {label}")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        print(f"    [{i}] fgraph {np.array2string(a, precision=5):<24} jax.grad {np.array2string(b, precision=5)}")
    assert all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(ours, theirs)), label


# 1. A small graph: gradients, and the graph that produced them ---------------------------------
print("1. y = x * w + b, z = y ** 2 at x=2, w=3, b=1")
x = fg.tensor(2.0, requires_grad=True)
w = fg.tensor(3.0, requires_grad=True)
b = fg.tensor(1.0, requires_grad=True)
y = x * w + b
z = y**2
gx, gw, gb = fg.grad(z, [x, w, b])
print(f"  dz/dx = {gx.item():g}, dz/dw = {gw.item():g}, dz/db = {gb.item():g}")  # 42, 28, 14
assert (gx.item(), gw.item(), gb.item()) == (42.0, 28.0, 14.0)
print("  the graph recorded by the forward pass (z.grad_fn and its next_functions):")
show_graph(z.grad_fn, {id(x): "x", id(w): "w", id(b): "b"})

# 2. backward(inputs=...): only the requested leaves get gradients ------------------------------
print("\n2. z = exp(x * y).sum(), fg.backward(z, inputs=[x])")
x = fg.tensor([0.5, 0.75], requires_grad=True)
y = fg.tensor([0.1, 0.9], requires_grad=True)
z = fg.exp(x * y).sum()
grads = fg.backward(z, inputs=[x])  # a read-only mapping leaf -> gradient; nothing is stored on x
print(f"  x in grads: {x in grads}, grads[x] = {np.array2string(np.asarray(grads[x].array), precision=5)}")
print(f"  y in grads: {y in grads}  (y was not asked for)")
assert x in grads and y not in grads
grads_xy = grads[x]

# 3. Higher derivatives: create_graph=True makes the gradient itself differentiable -------------
print("\n3. f(x) = sin(x) * x**3, third derivative at x = 0.7")
x3 = fg.tensor(0.7, requires_grad=True)
f = fg.sin(x3) * x3**3
(d1,) = fg.grad(f, [x3], create_graph=True)
(d2,) = fg.grad(d1, [x3], create_graph=True)
(d3,) = fg.grad(d2, [x3])
xv = 0.7
closed_form = -xv**3 * np.cos(xv) - 9 * xv**2 * np.sin(xv) + 18 * xv * np.cos(xv) + 6 * np.sin(xv)
print(f"  f' = {d1.item():.6f}, f'' = {d2.item():.6f}, f''' = {d3.item():.6f} "
      f"(closed form f''' = {closed_form:.6f})")
assert np.isclose(d3.item(), closed_form, rtol=1e-5)

# 4. The same gradients from jax.grad on pure-JAX versions of each function --------------------
print("\n4. fgraph vs jax.grad (pure JAX versions of the same functions)")
side_by_side(
    "(x * w + b) ** 2 wrt x, w, b",
    [gx, gw, gb],
    jax.grad(lambda x, w, b: (x * w + b) ** 2, argnums=(0, 1, 2))(2.0, 3.0, 1.0),
)
side_by_side(
    "exp(x * y).sum() wrt x",
    [grads_xy],
    [jax.grad(lambda x, y: jnp.exp(x * y).sum())(jnp.array([0.5, 0.75]), jnp.array([0.1, 0.9]))],
)
f_jax = lambda x: jnp.sin(x) * x**3  # noqa: E731
side_by_side(
    "sin(x) * x**3: f', f'', f'''",
    [d1, d2, d3],
    [jax.grad(f_jax)(0.7), jax.grad(jax.grad(f_jax))(0.7), jax.grad(jax.grad(jax.grad(f_jax)))(0.7)],
)
print("  all agree.")
