"""``fgraph.compile``: a whole eager training step as one XLA program.

``step = fg.compile(fn)`` traces ``fn`` -- forward, ``fg.grad``/``backward`` with its hooks
and custom Functions, ``opt.step``, a ``GradScaler``'s ``step``/``update`` -- into one ``jax.jit``
program. Modules, optimizers, generators and gradient scalers passed in (or reached through
``fn``'s closure or globals, or holding an optimizer's parameters) are split into their arrays
and their structure; after each call the new arrays are written back into the same objects, so
``step(model, opt, x, y)`` in a loop behaves like the eager loop: parameters rebound, BatchNorm
statistics updated, optimizer state advanced, the default generator advanced, a scaler's scale
grown or backed off. Learning rates are inputs, so
a scheduler stepping between calls retraces nothing.

A call traces again only for new shapes, dtypes, static values or module structure
(``training`` flags, hooks, optimizer options that shape the update); ``traces`` counts the
traces and ``retrace_reasons`` says why each retrace happened (logged on the
``fgraph.compile`` logger; at warning level with ``explain=True``).

Python code in ``fn`` runs once per trace: hooks run then, their side effects once;
deciding on tensor values (``if loss > 0``, ``.item()``, boolean masks) raises a
:class:`CompileError` naming the line.

Example:
    >>> import fgraph as fg
    >>> model = fg.nn.Linear(3, 1)
    >>> opt = fg.optim.SGD(model.parameters(), lr=0.1)
    >>> @fg.compile
    ... def step(model, opt, x, y):
    ...     loss = ((model(x) - y) ** 2).mean()
    ...     opt.step(loss.backward())
    ...     return loss
    >>> x, y = fg.ones(4, 3), fg.zeros(4, 1)
    >>> losses = [step(model, opt, x, y).item() for _ in range(3)]
    >>> losses[0] > losses[1] > losses[2], step.traces
    (True, 1)
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from fgraph.compile._compiled import CompiledFunction
from fgraph.compile._errors import CompileError

__all__ = ["compile", "CompiledFunction", "CompileError"]


def compile(fn: Optional[Callable] = None, *, static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
            donate_argnums: Sequence[int] = (), in_shardings: Any = None, out_shardings: Any = None,
            explain: bool = False, mode: str = "default") -> Any:
    """Compile ``fn`` (a step that builds an fgraph graph, differentiates it and updates state) into one program.

    Used as ``fg.compile(fn, ...)``, ``@fg.compile`` or ``@fg.compile(static_argnums=...)``.
    ``static_argnums``/``static_argnames``: arguments that are settings, not arrays (hashable; a new
    value retraces). ``donate_argnums``: arguments whose arrays (a module's or optimizer's state
    included) the program may reuse for its results. ``in_shardings``: per positional argument, a
    ``jax.sharding.Sharding`` (or ``None``) its arrays are placed with before the call;
    ``out_shardings``: a sharding, or a pytree prefix of the results. ``explain``: log why each
    retrace happened at warning level. ``mode="lazy"``: no tracing of ``fn`` at all; each call runs it
    under ``with fg.lazy():`` (ops record, one cached XLA program per call structure; see
    ``docs/lazy.md``); the other options do not apply then.

    Example:
        >>> import fgraph as fg
        >>> f = fg.compile(lambda x: (x * x).sum())
        >>> f(fg.tensor([1.0, 2.0])).item()
        5.0
    """
    if mode == "lazy":
        from fgraph.lazy import lazy

        return lazy() if fn is None else lazy()(fn)
    if mode != "default":
        raise ValueError(f"compile: mode must be 'default' or 'lazy', got {mode!r}.")
    options = dict(static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
                   in_shardings=in_shardings, out_shardings=out_shardings, explain=explain)
    if fn is None:
        def decorate(f: Callable) -> CompiledFunction:
            return CompiledFunction(f, **options)
        return decorate
    return CompiledFunction(fn, **options)
