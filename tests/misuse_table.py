"""The misuse table: common mistakes, one line each, and what fgraph must answer.

Each :class:`Mistake` is a call a new user might write by mistake and either the
exception fgraph must raise (its type, and regexes its message must match: the op or
argument it names AND the fix it offers) or, where the right thing is to do what was
meant, ``raises=None`` and a ``check`` of the result. ``tests/test_misuse.py`` runs every
row; ``docs/common-mistakes.md`` is generated from this table
(``PYTHONPATH=. python tests/misuse_table.py > docs/common-mistakes.md``) and a test fails when the two
disagree.

Adding a mistake: append one ``Mistake(...)`` to :data:`TABLE` and regenerate the doc.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.autograd.checkpoint import checkpoint
from fgraph.errors import GradError, OpError, TracedValueError



class Mistake(NamedTuple):
    name: str
    section: str  #: "silent" (used to give a wrong result) or "error" (the message was unclear)
    mistake: str  #: what the user wrote, for the doc (Markdown)
    call: Callable[[], Any]
    raises: Optional[type]  #: None: the call must work and ``check(result)`` hold
    match: tuple = ()  #: regexes the message must match: the op/argument named, and the fix
    fix: str = ""  #: the fix, for the doc (Markdown)
    check: Optional[Callable[[Any], bool]] = None
    marks: tuple = ()


# -- small programs the rows share ------------------------------------------------------------------
def _leaf(*values: float) -> fg.Tensor:
    return fg.tensor(list(values) or [1.0, 2.0, 3.0], requires_grad=True)


def _grad_with_tensor_hook(hook: Callable) -> tuple:
    x = _leaf()
    x.register_hook(hook)
    return fg.grad((x * x).sum(), [x])


def _grad_with_node_hook(kind: str, hook: Callable) -> tuple:
    x = _leaf()
    y = fg.exp(x)
    getattr(y.grad_fn, kind)(hook)
    return fg.grad(y.sum(), [x])


def _module_hook_wrong_shape() -> Any:
    layer = fg.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gin, gout: (fg.ones(7),))
    x = _leaf()
    return fg.grad(layer(x).sum(), [x])


def _set_gradient() -> None:
    x = _leaf()
    grads = (x * x).sum().backward()
    grads[x] = fg.zeros(3)


def _checkpoint_changing_shape() -> Any:
    calls = []

    def block(x: fg.Tensor) -> fg.Tensor:
        calls.append(1)
        return x * 2 if len(calls) == 1 else (x * 2).sum()

    x = _leaf()
    return fg.grad(checkpoint(block, x).sum(), [x])


def _torch_float64() -> fg.Tensor:
    torch = pytest.importorskip("torch")
    return fg.tensor(torch.zeros(2, dtype=torch.float64))


def _torch_tensor() -> Any:
    return pytest.importorskip("torch").ones(2)


def _no_grad_without_parens() -> bool:
    @fg.no_grad
    def f() -> bool:
        return fg.is_grad_enabled()

    return f()


def _no_grad_generator() -> list:
    @fg.no_grad()
    def gen() -> Any:
        yield fg.is_grad_enabled()
        yield fg.is_grad_enabled()

    return list(gen())


def _jit(fn: Callable) -> Any:
    return jax.jit(fn)(jnp.ones(()))


def _is_float64(t: Any) -> bool:
    return t.dtype == np.float64


TABLE: list[Mistake] = [
    # -- mistakes that used to give a silently wrong result --------------------------------------------
    Mistake("tensor_hook_wrong_shape", "silent", "a tensor hook returns a gradient of another shape",
            lambda: _grad_with_tensor_hook(lambda g: fg.ones(7)), RuntimeError, ("hook", "size|shape"),
            "return a gradient of the tensor's shape"),
    Mistake("tensor_hook_wrong_dtype", "silent", "a hook on a float leaf returns `g.long()`",
            lambda: _grad_with_tensor_hook(lambda g: g.long()), RuntimeError, ("hook", "dtype|type"),
            "return a gradient of the tensor's dtype"),
    Mistake("node_post_hook_wrong_shape", "silent", "a node post-hook returns a `grad_inputs` entry of another shape",
            lambda: _grad_with_node_hook("register_hook", lambda gin, gout: (fg.ones(7),)), RuntimeError,
            ("hook", "size|shape"), "return gradients of the inputs' shapes"),
    Mistake("node_pre_hook_wrong_shape", "silent", "a node pre-hook returns a `grad_outputs` entry of another shape",
            lambda: _grad_with_node_hook("register_prehook", lambda gout: (fg.ones(7),)), RuntimeError,
            ("hook", "size|shape"), "return gradients of the outputs' shapes"),
    Mistake("module_backward_hook_wrong_shape", "silent", "a module backward hook returns a `grad_input` of another shape",
            _module_hook_wrong_shape, RuntimeError, ("hook", "size|shape"),
            "return gradients of the inputs' shapes"),
    Mistake("complex_implicit_seed", "silent", "`fg.grad((x * (1 + 1j)).sum(), [x])`: implicit seed of a complex output",
            lambda: fg.grad((_leaf() * (1 + 1j)).sum(), [_leaf()]), GradError,
            (r"grad:", "real scalar outputs", "grad_outputs", r"\.real|abs\(\)"),
            "pass `grad_outputs` explicitly, or differentiate `out.real` / `out.abs()`"),
    Mistake("flatten_start_after_end", "silent", "`fg.flatten(x, 1, 0)`",
            lambda: fg.flatten(fg.ones(2, 3), 1, 0), OpError, ("flatten", "start_dim <= end_dim"),
            "pass `start_dim <= end_dim`"),
    Mistake("cat_of_a_tensor", "silent", "`fg.cat(x)` with a Tensor instead of a list",
            lambda: fg.cat(fg.ones(2, 3)), OpError, ("cat", r"fg\.cat\(\[a, b\]\)"), "`fg.cat([a, b])`"),
    Mistake("stack_of_a_tensor", "silent", "`fg.stack(x)` with a Tensor instead of a list",
            lambda: fg.stack(fg.ones(2, 3)), OpError, ("stack", r"fg\.stack\(\[a, b\]\)"), "`fg.stack([a, b])`"),
    Mistake("iterate_0d", "silent", "`list(fg.tensor(1.0))` (was `[]`)",
            lambda: list(fg.tensor(1.0)), TypeError, ("0-d tensor", r"item\(\)"), "`t.item()`"),
    Mistake("float_tensor_as_index", "silent", "`[1, 2, 3][fg.tensor(1.7)]` (truncated through `__index__`)",
            lambda: [1, 2, 3][fg.tensor(1.7)], TypeError, ("index", r"int\(t\)|long\(\)"),
            "`int(t)` or an integer tensor"),
    Mistake("numpy_ufunc_on_requires_grad", "silent", "`np.exp(x)` on a tensor that requires grad (dropped the graph)",
            lambda: np.exp(_leaf()), RuntimeError, (r"np\.exp", "requires grad", r"fg\.exp", r"detach\(\)"),
            "`fg.exp(x)` keeps the graph; `x.detach()` for values"),
    Mistake("tensor_from_torch_float64", "silent", "`fg.tensor(torch_float64_tensor)` (gave float32)",
            _torch_float64, None, fix="keeps float64, like NumPy and JAX input", check=_is_float64),
    Mistake("requires_grad_string", "silent", "`fg.tensor([1.0], requires_grad=\"False\")` (a truthy string)",
            lambda: fg.tensor([1.0], requires_grad="False"), TypeError, ("requires_grad", "True or False"),
            "pass a bool"),
    Mistake("requires_grad_int", "silent", "`fg.ones(2, requires_grad=1)`",
            lambda: fg.ones(2, requires_grad=1), TypeError, ("requires_grad", "True or False"), "pass a bool"),
    Mistake("set_grad_enabled_string", "silent", "`fg.set_grad_enabled(\"no\")`",
            lambda: fg.set_grad_enabled("no"), TypeError, ("set_grad_enabled", "mode=False"), "pass a bool"),
    # -- mistakes whose error was unclear ------------------------------------------------------------
    Mistake("tensor_of_strings", "error", "`fg.tensor([\"1.0\", \"2.0\"])`",
            lambda: fg.tensor(["1.0", "2.0"]), TypeError, ("tensor", "strings", r"float\(s\)"),
            "convert the strings to numbers first"),
    Mistake("arange_zero_step", "error", "`fg.arange(0, 5, 0)`",
            lambda: fg.arange(0, 5, 0), OpError, ("arange", "step must be nonzero", "linspace"),
            "a nonzero step, or `fg.linspace(start, end, n)`"),
    Mistake("assign_into_gradients", "error", "`grads[x] = g` on the `Gradients` that `backward` returns",
            _set_gradient, TypeError, ("Gradients is read-only", r"dict\(grads\)"),
            "`new = dict(grads); new[x] = g` (optimizers take any mapping)"),
    Mistake("matmul_of_lists", "error", "`fg.matmul([[1.0]], [[2.0]])` on Python lists",
            lambda: fg.matmul([[1.0]], [[2.0]]), OpError, ("matmul", "list", r"fg\.tensor"),
            "wrap with `fg.tensor(...)`"),
    Mistake("conv_mixed_dtypes", "error", "`F.conv2d` with a float64 input and a float32 weight",
            lambda: F.conv2d(fg.ones(1, 1, 4, 4, dtype=fg.float64), fg.ones(1, 1, 2, 2)), None,
            fix="promoted to float64, as `matmul` and `linear` do", check=_is_float64),
    Mistake("cat_of_torch_tensors", "error", "a `torch.Tensor` in `fg.cat([...])`",
            lambda: fg.cat([_torch_tensor(), fg.ones(2)]), OpError, ("cat", "element 0", r"interop\.from_torch"),
            "`interop.from_torch(t)`"),
    Mistake("grad_of_torch_tensor", "error", "`fg.grad(torch_tensor.sum(), [x])`",
            lambda: fg.grad(_torch_tensor().sum(), [_leaf()]), TypeError, ("grad: outputs", r"interop\.from_torch"),
            "`interop.from_torch(t)`"),
    Mistake("grad_wrt_torch_tensor", "error", "`fg.grad(y, [torch_tensor])`",
            lambda: fg.grad((_leaf() * 2).sum(), [_torch_tensor()]), TypeError,
            (r"grad: inputs\[0\]", r"interop\.from_torch"), "`interop.from_torch(t)`"),
    Mistake("checkpoint_recompute_changes_shape", "error", "a checkpointed block whose recomputation changes shape",
            _checkpoint_changing_shape, GradError, ("checkpoint", "recomput", "depend only on its arguments"),
            "make the block depend only on its arguments"),
    Mistake("item_under_jit", "error", "`t.item()` inside `jax.jit`",
            lambda: _jit(lambda a: fg.tensor(a).item()), TracedValueError, (r"item\(\)", "traced", "return the tensor"),
            "keep the value a Tensor, read it outside"),
    Mistake("if_on_tensor_under_jit", "error", "`if t > 0:` inside `jax.jit`",
            lambda: _jit(lambda a: 1.0 if fg.tensor(a) > 0 else 0.0), TracedValueError, (r"bool\(\)", r"fg\.where"),
            "`fg.where(cond, a, b)`"),
    Mistake("float_under_jit", "error", "`float(t)` inside `jax.jit`",
            lambda: _jit(lambda a: float(fg.tensor(a))), TracedValueError, (r"item\(\)", "traced"),
            "keep the value a Tensor"),
    Mistake("grad_outputs_scalar", "error", "`fg.grad(y, [x], grad_outputs=1.0)`",
            lambda: fg.grad((_leaf() * 2).sum(), [_leaf()], grad_outputs=1.0), TypeError,
            ("grad_outputs", r"fg\.ones_like"), "`grad_outputs=[fg.ones_like(y)]`"),
    Mistake("no_grad_without_parentheses", "error", "`@fg.no_grad` without parentheses",
            _no_grad_without_parens, None, fix="works, as in PyTorch", check=lambda r: r is False),
    Mistake("no_grad_on_generator", "silent", "`@fg.no_grad()` on a generator function",
            _no_grad_generator, None, fix="grad mode applies inside the generator, as in PyTorch",
            check=lambda r: r == [False, False]),
    # -- PyTorch habits --------------------------------------------------------------------------------
    Mistake("read_dot_grad", "error", "`x.grad` after `loss.backward()`",
            lambda: _leaf().grad, AttributeError, ("grad", r"grads = loss\.backward\(\)"),
            "`grads = loss.backward(); grads[x]`"),
    Mistake("in_place_op", "error", "`x.add_(1)`", lambda: _leaf().add_(1), AttributeError,
            ("add_", r"x = x\.add\("), "`x = x.add(...)`"),
    Mistake("item_assignment", "error", "`x[0] = 1.0`", lambda: fg.ones(3).__setitem__(0, 1.0), TypeError,
            ("item assignment", r"at\[idx\]\.set"), "`x = x.at[0].set(1.0)` (`.add` for `+=`), or `fg.where(mask, v, x)`"),
    Mistake("backward_of_non_scalar", "error", "`y.backward()` on a non-scalar `y`",
            lambda: (_leaf() * 2).backward(), GradError, ("scalar outputs", r"fg\.ones_like"),
            "reduce it, or pass `fg.ones_like(y)`"),
    Mistake("requires_grad_on_int", "error", "`fg.tensor([1, 2], requires_grad=True)`",
            lambda: fg.tensor([1, 2], requires_grad=True), TypeError, ("requires_grad", r"\.float\(\)"),
            "`.float()` or `dtype=fg.float32`"),
]


def render_markdown() -> str:
    """``docs/common-mistakes.md``: the table as a page."""
    lines = [
        "# Common mistakes",
        "",
        "What fgraph answers to mistakes a new user makes. Each row is one line of",
        "`tests/misuse_table.py`, run by `tests/test_misuse.py`; this page is generated from it",
        "(`PYTHONPATH=. python tests/misuse_table.py > docs/common-mistakes.md`) and a test fails when they disagree.",
        "Every error names the function or argument and the fix. Rows marked *(pending)* are",
        "specified but not implemented yet.",
        "",
    ]
    titles = {"silent": "Used to give a wrong result silently", "error": "Clear errors"}
    for section in ("silent", "error"):
        lines += [f"## {titles[section]}", "", "| mistake | fgraph | fix |", "|---|---|---|"]
        for m in TABLE:
            if m.section != section:
                continue
            answer = "works" if m.raises is None else f"`{m.raises.__name__}`"
            pending = " *(pending)*" if m.marks else ""
            lines.append(f"| {m.mistake} | {answer}{pending} | {m.fix} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
