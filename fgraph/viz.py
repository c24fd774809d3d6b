"""Pictures of the backward graph: torchviz's ``make_dot`` for fgraph.

:func:`to_dot` returns the DOT text (Graphviz's language) of the backward graph
reachable from one or more output tensors; it needs nothing beyond fgraph.
:func:`make_dot` returns the same graph as a ``graphviz.Digraph`` (optional extra:
``pip install 'fgraph[viz]'``), which renders to SVG or PNG where Graphviz's ``dot``
program is installed.

What is drawn, with torchviz's conventions:

* every ``grad_fn`` node by its ``name()`` (``MulBackward0``, ``AccumulateGrad``,
  ``MyFunctionBackward``...), grey boxes, each drawn once however many paths reach it;
* the output tensors, ``darkolivegreen1``, with their shape (and their name when the
  outputs are given as a dict);
* the leaf behind each ``AccumulateGrad``, ``lightblue``, labelled with its name from
  ``params`` (``dict(model.named_parameters())``; matched by identity) and its shape;
* with ``show_saved=True``, what each node keeps for its derivative rule, ``orange``:
  ``inputs[i]`` / ``result`` of a primitive, ``saved_tensors[i]`` of a custom
  :class:`~fgraph.autograd.Function`, one box per saved slot, joined to the node by an
  undirected edge. A value packed by ``saved_tensors_hooks`` is drawn as
  ``(packed <type>)`` *without* calling the unpack hook (unpacking may move data
  between devices, count calls or fail), with its shape when the packed object has one;
* with ``show_attrs=True``, each node's static parameters (``exponent: 2``), its custom
  Function's ``ctx`` attributes and its saved values, truncated to ``max_attr_chars``.

An edge ``A -> B`` means ``A`` is in ``B.next_functions``: arrows follow the forward
computation from the leaves to the outputs, as in torchviz. When ``A`` has several
outputs (``split``, a multi-output Function) the edge is labelled with the output index.

Node ids are ``n0, n1, ...`` in discovery order (outputs first, then a depth-first walk
along ``next_functions``), so the same graph always gives the same text. The walk is
iterative and linear in the size of the graph: a 100,000-node chain is fine.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor(2.0, requires_grad=True)
    >>> w = fg.tensor([1.0, 3.0], requires_grad=True)
    >>> print(fg.viz.to_dot((x * w).sum(), params={"x": x, "w": w}))
    digraph {
        graph [size="12,12"]
        node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]
        n0 [label="()" fillcolor=darkolivegreen1]
        n1 [label="SumBackward0"]
        n2 -> n1
        n2 [label="MulBackward0"]
        n3 -> n2
        n4 -> n2
        n3 [label="AccumulateGrad"]
        n5 [label="x\\n()" fillcolor=lightblue]
        n5 -> n3
        n4 [label="AccumulateGrad"]
        n6 [label="w\\n(2)" fillcolor=lightblue]
        n6 -> n4
        n1 -> n0
    }
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Union

from fgraph.autograd.function import FunctionBackward, _SavedOutput
from fgraph.autograd.graph import AccumulateGrad, Node
from fgraph.autograd.saved_tensors import Packed
from fgraph.ops._declare import OpNode
from fgraph.tensor import Tensor, _is_torch_tensor

__all__ = ["to_dot", "make_dot", "OUTPUT_COLOR", "LEAF_COLOR", "SAVED_COLOR"]

#: Fill colours, as torchviz's.
OUTPUT_COLOR = "darkolivegreen1"
LEAF_COLOR = "lightblue"
SAVED_COLOR = "orange"

#: torchviz's node style (sorted by key, the order the ``graphviz`` package writes them in).
_NODE_ATTR = {
    "align": "left",
    "fontname": "monospace",
    "fontsize": "10",
    "height": "0.2",
    "ranksep": "0.1",
    "shape": "box",
    "style": "filled",
}

Outputs = Union[Tensor, Iterable[Tensor], Mapping[str, Tensor]]


def to_dot(
    tensor_or_tensors: Outputs,
    params: Optional[Mapping[str, Tensor]] = None,
    show_saved: bool = False,
    show_attrs: bool = False,
    max_attr_chars: int = 50,
) -> str:
    """The DOT text of the backward graph that produced ``tensor_or_tensors``.

    Args:
        tensor_or_tensors: one output tensor, a sequence of them, or a dict
            ``{name: tensor}`` (the names label the output boxes). Each must require
            grad (a tensor with no graph raises ``ValueError``).
        params: ``{name: leaf}``, e.g. ``dict(model.named_parameters())``: names for the
            leaves (matched by identity, not by value). Unnamed leaves show only their shape.
        show_saved: also draw what each node saved for backward (orange boxes).
        show_attrs: list each node's static parameters and saved values under its name.
        max_attr_chars: width at which attribute values are truncated (at least 3).

    Returns:
        A ``digraph { ... }`` string; render it with ``dot -Tsvg`` or :func:`make_dot`.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> text = fg.viz.to_dot(fg.exp(x).sum(), show_saved=True)
        >>> [line.strip() for line in text.splitlines() if "label" in line]  # doctest: +NORMALIZE_WHITESPACE
        ['n0 [label="()" fillcolor=darkolivegreen1]', 'n1 [label="SumBackward0"]', 'n2 [label="ExpBackward0"]',
         'n4 [label="result\\\\n(2)" fillcolor=orange]', 'n3 [label="AccumulateGrad"]',
         'n5 [label="(2)" fillcolor=lightblue]']
    """
    size, lines = _Builder("to_dot", params, show_saved, show_attrs, max_attr_chars).build(tensor_or_tensors)
    header = [f'\tgraph [size="{size}"]', "\tnode [" + " ".join(f"{k}={v}" for k, v in _NODE_ATTR.items()) + "]"]
    return "digraph {\n" + "\n".join(header + ["\t" + line for line in lines]) + "\n}\n"


def make_dot(
    tensor_or_tensors: Outputs,
    params: Optional[Mapping[str, Tensor]] = None,
    show_saved: bool = False,
    show_attrs: bool = False,
    max_attr_chars: int = 50,
) -> Any:
    """The backward graph as a ``graphviz.Digraph`` (same arguments and drawing as :func:`to_dot`).

    Needs the ``graphviz`` Python package (``pip install 'fgraph[viz]'``); rendering
    (``.render()``, ``.pipe()``, display in Jupyter) also needs Graphviz's ``dot`` program.
    ``make_dot(...).source`` equals ``to_dot(...)``.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor(2.0, requires_grad=True)
        >>> dot = fg.viz.make_dot(x.exp() * x, params={"x": x})            # doctest: +SKIP
        >>> dot.render("graph", format="svg", cleanup=True)                 # doctest: +SKIP
        'graph.svg'
    """
    graphviz = _import_graphviz()
    size, lines = _Builder("make_dot", params, show_saved, show_attrs, max_attr_chars).build(tensor_or_tensors)
    dot = graphviz.Digraph(node_attr=dict(_NODE_ATTR), graph_attr={"size": size})
    dot.body.extend(f"\t{line}\n" for line in lines)
    return dot


def _import_graphviz() -> Any:
    try:
        import graphviz
    except ImportError:
        raise ImportError(
            "make_dot needs the graphviz Python package: pip install 'fgraph[viz]' (or pip install graphviz); "
            "rendering also needs Graphviz's dot program (https://graphviz.org/download/). "
            "fgraph.viz.to_dot gives the DOT text with no dependency."
        ) from None
    return graphviz


# -- building the statements -------------------------------------------------------------------------
class _Builder:
    """Walks the graph once and writes one DOT statement per node and edge."""

    def __init__(self, caller: str, params: Any, show_saved: bool, show_attrs: bool, max_attr_chars: int) -> None:
        self.caller = caller
        self.show_saved = bool(show_saved)
        self.show_attrs = bool(show_attrs)
        self.max_attr_chars = max(int(max_attr_chars), 3)
        self.lines: list[str] = []
        self.count = 0
        self.leaf_ids: dict[int, str] = {}  # id(AccumulateGrad) -> DOT id of its leaf's box
        self.names_by_tensor: dict[int, str] = {}
        self.names_by_accumulator: dict[int, str] = {}
        self._read_params(params)

    def _new_id(self) -> str:
        name = f"n{self.count}"
        self.count += 1
        return name

    def _read_params(self, params: Any) -> None:
        if params is None:
            return
        items = params.items() if isinstance(params, Mapping) else params
        try:
            pairs = [(name, value) for name, value in items]
        except (TypeError, ValueError):
            raise TypeError(
                f"{self.caller}: params must be a dict {{name: tensor}}, e.g. dict(model.named_parameters()), "
                f"got a {type(params).__name__}."
            ) from None
        for name, value in pairs:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"{self.caller}: params[{name!r}] is a {type(value).__name__}, not an fgraph Tensor; params maps "
                    "names to the leaf tensors to label, e.g. dict(model.named_parameters())."
                )
            self.names_by_tensor.setdefault(id(value), str(name))
            edge = value._edge
            if edge is not None and isinstance(edge[0], AccumulateGrad):
                self.names_by_accumulator.setdefault(id(edge[0]), str(name))

    def _outputs(self, given: Any) -> list[tuple[str, str, Tensor]]:
        """``(where, name, tensor)`` for each output; ``where`` locates it in error messages."""
        if isinstance(given, Tensor):
            items = [("the tensor", "", given)]
        elif isinstance(given, Mapping):
            items = [(f"output {k!r}", str(k), v) for k, v in given.items()]
        elif isinstance(given, (list, tuple)):
            items = [(f"output {i}", "", v) for i, v in enumerate(given)]
        else:
            raise TypeError(self._not_a_tensor("tensor_or_tensors", given))
        if not items:
            raise ValueError(f"{self.caller}: no output tensors were given; pass a tensor, a list of them or a dict.")
        for where, _, t in items:
            if not isinstance(t, Tensor):
                raise TypeError(self._not_a_tensor(where, t))
            if t._edge is None:
                raise ValueError(
                    f"{self.caller}: {where} (shape {tuple(t.shape)}, dtype {t.dtype}) does not require grad, so it "
                    "has no backward graph to draw. Compute it from a tensor created with requires_grad=True, "
                    "outside fg.no_grad() and without .detach()."
                )
        return items

    def _not_a_tensor(self, where: str, value: Any) -> str:
        if isinstance(value, Node):
            return f"{self.caller}: {where} is a {value.name()} node; pass the tensor it produced, not its grad_fn."
        if _is_torch_tensor(value):
            return f"{self.caller}: {where} is a torch.Tensor; draw fgraph tensors (for torch, use torchviz)."
        return (
            f"{self.caller}: {where} is a {type(value).__name__}; expected an fgraph Tensor, a list/tuple of "
            "them or a dict {name: tensor}."
        )

    def build(self, given: Any) -> tuple[str, list[str]]:
        out_ids: dict[int, str] = {}
        out_edges: list[tuple[Node, int, str]] = []
        roots: list[Node] = []
        for _, name, t in self._outputs(given):
            if id(t) in out_ids:
                continue
            box = out_ids[id(t)] = self._new_id()
            label = name or self.names_by_tensor.get(id(t), "")
            self._box(box, _join(label, _shape(t.shape)), OUTPUT_COLOR)
            node, output_nr = t._edge
            if t.grad_fn is None:
                self.leaf_ids.setdefault(id(node), box)  # a leaf output is also its AccumulateGrad's leaf
            else:
                roots.append(node)
                out_edges.append((node, output_nr, box))
        ids, order = self._walk(roots)
        for node in order:
            self._node(node, ids)
        for node, output_nr, box in out_edges:
            self._edge(ids[id(node)], box, _edge_label(node, output_nr))
        size = max(12.0, len(self.lines) * 0.15)  # torchviz's resize_graph
        text = f"{size:.1f}".rstrip("0").rstrip(".")
        return f"{text},{text}", self.lines

    def _walk(self, roots: list[Node]) -> tuple[dict[int, str], list[Node]]:
        """Depth-first preorder over ``next_edges`` with an explicit stack: ids and visiting order."""
        ids: dict[int, str] = {}
        order: list[Node] = []
        stack = roots[::-1]
        while stack:
            node = stack.pop()
            if id(node) in ids:
                continue
            ids[id(node)] = self._new_id()
            order.append(node)
            edges = node.next_edges
            for i in range(len(edges) - 1, -1, -1):
                edge = edges[i]
                if edge is not None and id(edge[0]) not in ids:
                    stack.append(edge[0])
        return ids, order

    def _node(self, node: Node, ids: dict[int, str]) -> None:
        box = ids[id(node)]
        label = node.name()
        if self.show_attrs:
            label = _attr_table(label, _attributes(node), self.max_attr_chars)
        self.lines.append(f"{box} [label={_quote(label)}]")
        for edge in node.next_edges:
            if edge is not None:
                self._edge(ids[id(edge[0])], box, _edge_label(edge[0], edge[1]))
        if isinstance(node, AccumulateGrad):
            self._leaf(node, box)
        if self.show_saved:
            for slot, value in _saved(node):
                saved_box = self._new_id()
                self._box(saved_box, _join(slot, _value_text(value)), SAVED_COLOR)
                self.lines.append(f"{box} -> {saved_box} [dir=none]")

    def _leaf(self, node: AccumulateGrad, box: str) -> None:
        leaf_box = self.leaf_ids.get(id(node))
        if leaf_box is None:
            variable = node.variable
            if variable is None:  # the leaf was garbage collected; its node stays in the graph
                return
            leaf_box = self.leaf_ids[id(node)] = self._new_id()
            name = self.names_by_accumulator.get(id(node), self.names_by_tensor.get(id(variable), ""))
            self._box(leaf_box, _join(name, _shape(variable.shape)), LEAF_COLOR)
        self._edge(leaf_box, box, None)

    def _box(self, box: str, label: str, color: str) -> None:
        self.lines.append(f"{box} [label={_quote(label)} fillcolor={color}]")

    def _edge(self, tail: str, head: str, label: Optional[str]) -> None:
        self.lines.append(f"{tail} -> {head}" if label is None else f"{tail} -> {head} [label={_quote(label)}]")


# -- what a node shows -----------------------------------------------------------------------------
def _saved(node: Node) -> list[tuple[str, Any]]:
    """``(slot, value)`` for each array-like value the node keeps for backward (nothing is unpacked)."""
    out = []
    if isinstance(node, OpNode):
        inputs = node.saved_inputs
        if inputs is not None:
            out.extend((f"inputs[{i}]", v) for i, v in enumerate(inputs) if _is_array_like(v))
        result = node.saved_result
        if result is not None:
            if isinstance(result, tuple):
                out.extend((f"result[{i}]", r) for i, r in enumerate(result))
            else:
                out.append(("result", result))
    elif isinstance(node, FunctionBackward):
        for i, entry in enumerate(node._saved):
            if type(entry) is _SavedOutput:
                entry = entry.data
            if _is_array_like(entry):
                out.append((f"saved_tensors[{i}]", entry))
    return out


def _attributes(node: Node) -> dict[str, str]:
    attrs: dict[str, str] = {}
    if isinstance(node, OpNode):
        if node.params is not None:
            for key, value in node.params._asdict().items():
                attrs[key] = value.__name__ if isinstance(value, type) else _one_line(value)
        inputs = node.saved_inputs
        if inputs is not None:
            for i, v in enumerate(inputs):
                if v is not None:
                    attrs[f"inputs[{i}]"] = "[saved tensor]" if _is_array_like(v) else _one_line(v)
        if node.saved_result is not None:
            attrs["result"] = "[saved tensors]" if isinstance(node.saved_result, tuple) else "[saved tensor]"
    elif isinstance(node, FunctionBackward):
        for key, value in vars(node.ctx).items():
            if not key.startswith("_") and key != "needs_input_grad":
                attrs[key] = f"[tensor {_shape(value.shape)}]" if isinstance(value, Tensor) else _one_line(value)
        if any(entry is not None for entry in node._saved):
            attrs["saved_tensors"] = "[saved tensors]"
    return attrs


def _attr_table(name: str, attrs: dict[str, str], max_chars: int) -> str:
    """torchviz's layout: the name, a rule, then ``key: value`` rows in two padded columns."""
    if not attrs:
        return name
    col1 = max(len(k) for k in attrs)
    col2 = min(max(len(v) for v in attrs.values()), max_chars)
    rows = []
    for key, value in attrs.items():
        if len(value) > col2:
            value = value[: col2 - 3] + "..."
        rows.append(f"{key:<{col1}}: {value:<{col2}}")
    return name + "\n" + "-" * max(col1 + col2 + 2, len(name)) + "\n" + "\n".join(rows)


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def _is_array_like(value: Any) -> bool:
    return type(value) is Packed or (value is not None and hasattr(value, "shape") and hasattr(value, "dtype"))


def _value_text(value: Any) -> str:
    if type(value) is Packed:
        packed = value.value
        shape = getattr(packed, "shape", None)
        text = f"(packed {type(packed).__name__})"
        return text if not isinstance(shape, tuple) else text + "\n" + _shape(shape)
    return _shape(value.shape)


def _edge_label(node: Node, output_nr: int) -> Optional[str]:
    """The output index on an edge leaving a node with several outputs."""
    return str(output_nr) if getattr(node, "num_inputs", 1) > 1 else None


def _shape(shape: Any) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"  # torchviz's size_to_str


def _join(name: str, text: str) -> str:
    return f"{name}\n{text}" if name else text


def _quote(text: str) -> str:
    """A DOT double-quoted string whose label shows ``text`` literally, lines split at ``\\n``."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n") + '"'
