"""fgraph.viz: the DOT text of backward graphs (structure, labels, saved values, escaping, rendering).

``to_dot`` tests always run (no dependency); ``make_dot`` needs the optional ``graphviz``
package and rendering needs Graphviz's ``dot`` program: those parts skip without them.
Every graph is checked against an independent walk of ``next_functions``.
"""
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

import fgraph as fg
from fgraph import nn
from fgraph.autograd.graph import saved_tensors_hooks

_NODE = re.compile(r'^\t(n\d+) \[label="((?:[^"\\]|\\.)*)"(?: fillcolor=([\w]+))?\]$')
_EDGE = re.compile(r'^\t(n\d+) -> (n\d+)(?: \[(.*)\])?$')
_HEADER = (
    "digraph {",
    "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]",
)


def _unescape(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            nxt = text[i + 1]
            out.append("\n" if nxt == "n" else nxt)
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse(text):
    """``({id: (label, colour)}, [(tail, head, attrs)])``; asserts the text is well formed DOT of our shape."""
    lines = text.split("\n")
    assert lines[0] == _HEADER[0] and lines[2] == _HEADER[1], lines[:3]
    assert re.fullmatch(r'\tgraph \[size="[\d.]+,[\d.]+"\]', lines[1]), lines[1]
    assert lines[-2:] == ["}", ""]
    assert text.count("{") == text.count("}") == 1 + sum(line.count("{") for line in lines[3:-2])
    nodes, edges = {}, []
    for line in lines[3:-2]:
        m = _NODE.match(line)
        if m:
            assert m[1] not in nodes, f"node {m[1]} declared twice"
            nodes[m[1]] = (_unescape(m[2]), m[3])
            continue
        m = _EDGE.match(line)
        assert m, f"not a node or edge statement: {line!r}"
        edges.append((m[1], m[2], m[3]))
    for tail, head, _ in edges:
        assert tail in nodes and head in nodes, f"edge {tail} -> {head} to an undeclared node"
    return nodes, edges


def graph_edges(nodes, edges):
    """Directed (non-saved) edges by labels, AccumulateGrad named after the leaf feeding it."""
    label = {k: v[0] for k, v in nodes.items()}
    for tail, head, _ in edges:
        if label[head] == "AccumulateGrad" and nodes[tail][1] in ("lightblue", "darkolivegreen1"):
            label[head] = f"AccumulateGrad({label[tail]})"
    return Counter((label[t], label[h]) for t, h, attrs in edges if attrs != "dir=none")


def reference_edges(roots):
    """Independent walk: Counter of (child name, parent name) over next_functions, and the node count."""
    seen, stack, pairs = set(), list(roots), Counter()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for child, _ in node.next_functions:
            if child is not None:
                pairs[(child.name(), node.name())] += 1
                stack.append(child)
    return pairs, len(seen)


def check_against_walk(text, outputs):
    """The grad_fn boxes and the edges between them are exactly what next_functions says."""
    nodes, edges = parse(text)
    colours = {k: c for k, (_, c) in nodes.items()}
    fn_boxes = {k for k, c in colours.items() if c is None}
    pairs = Counter(
        (nodes[t][0].split("\n")[0], nodes[h][0].split("\n")[0])
        for t, h, a in edges if t in fn_boxes and h in fn_boxes
    )
    expected, count = reference_edges([o.grad_fn for o in outputs if o.grad_fn is not None])
    assert pairs == expected
    assert len(fn_boxes) == count
    return nodes, edges


def seeds():
    x = fg.tensor(2.0, requires_grad=True)
    w = fg.tensor(3.0, requires_grad=True)
    b = fg.tensor(1.0, requires_grad=True)
    y = x * w + b
    z = y**2
    return x, w, b, z


# -- structure -------------------------------------------------------------------------------------------
def test_seeds_graph_exact():
    x, w, b, z = seeds()
    text = fg.viz.to_dot({"z": z}, params={"x": x, "w": w, "b": b})
    nodes, edges = parse(text)
    assert Counter(nodes.values()) == Counter({
        ("z\n()", "darkolivegreen1"): 1,
        ("PowBackward0", None): 1, ("AddBackward0", None): 1, ("MulBackward0", None): 1,
        ("AccumulateGrad", None): 3,
        ("x\n()", "lightblue"): 1, ("w\n()", "lightblue"): 1, ("b\n()", "lightblue"): 1,
    })
    assert graph_edges(nodes, edges) == Counter({
        ("PowBackward0", "z\n()"): 1,
        ("AddBackward0", "PowBackward0"): 1,
        ("MulBackward0", "AddBackward0"): 1,
        ("AccumulateGrad(b\n())", "AddBackward0"): 1,
        ("AccumulateGrad(x\n())", "MulBackward0"): 1,
        ("AccumulateGrad(w\n())", "MulBackward0"): 1,
        ("x\n()", "AccumulateGrad(x\n())"): 1,
        ("w\n()", "AccumulateGrad(w\n())"): 1,
        ("b\n()", "AccumulateGrad(b\n())"): 1,
    })
    assert len(edges) == 9 and all(attrs is None for _, _, attrs in edges)
    check_against_walk(text, [z])


def test_seeds_graph_text_is_deterministic():
    texts = [fg.viz.to_dot(seeds()[3]) for _ in range(2)]
    assert texts[0] == texts[1]
    # discovery order: output, then a depth-first walk along next_functions (first input first)
    assert [line.split(" [")[0].strip() for line in texts[0].splitlines() if "label=" in line][:5] == [
        "n0", "n1", "n2", "n3", "n4"]
    nodes, _ = parse(texts[0])
    assert [nodes[f"n{i}"][0] for i in range(5)] == ["()", "PowBackward0", "AddBackward0", "MulBackward0",
                                                     "AccumulateGrad"]
    assert nodes["n7"] == ("()", "lightblue")  # an unnamed leaf shows its shape only


def test_mlp_leaves_carry_parameter_names_and_shapes():
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    inp = fg.randn(3, 4, requires_grad=True)
    out = model(inp)
    text = fg.viz.to_dot(out, params=dict(model.named_parameters()))
    nodes, edges = check_against_walk(text, [out])
    leaves = sorted(label for label, colour in nodes.values() if colour == "lightblue")
    assert leaves == ["(3, 4)", "0.bias\n(8)", "0.weight\n(8, 4)", "2.bias\n(2)", "2.weight\n(2, 8)"]
    assert [label for label, colour in nodes.values() if colour == "darkolivegreen1"] == ["(3, 2)"]
    assert ("ReluBackward0", None) in nodes.values()
    # the generator from named_parameters() works too, and matching is by identity, not by value
    assert fg.viz.to_dot(out, params=model.named_parameters()) == text
    twin = fg.tensor(model[0].bias.array, requires_grad=True)
    other = fg.viz.to_dot(out, params={"not_a_parameter_of_this_graph": twin})
    assert "not_a_parameter" not in other


def test_multiple_outputs_share_their_subgraph():
    x, w, b, _ = seeds()
    y = x * w + b
    outputs = [y.exp(), y.sin(), y.exp()]
    text = fg.viz.to_dot(outputs)
    nodes, edges = check_against_walk(text, outputs)
    labels = Counter(label for label, _ in nodes.values())
    assert labels["AddBackward0"] == 1 and labels["MulBackward0"] == 1 and labels["AccumulateGrad"] == 3
    assert labels["ExpBackward0"] == 2 and labels["SinBackward0"] == 1
    assert sum(c == "darkolivegreen1" for _, c in nodes.values()) == 3
    # a dict names the outputs; the same tensor given twice is drawn once
    named = parse(fg.viz.to_dot({"e": outputs[0], "s": outputs[1], "again": outputs[0]}))[0]
    greens = sorted(label for label, c in named.values() if c == "darkolivegreen1")
    assert greens == ["e\n()", "s\n()"]


def test_shared_subexpression_drawn_once_with_every_edge():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    z = y * y + y.exp()
    text = fg.viz.to_dot(z)
    nodes, edges = check_against_walk(text, [z])
    pairs = graph_edges(nodes, edges)
    assert pairs[("MulBackward0", "MulBackward0")] == 2  # y * y: two edges to the one node of y
    assert pairs[("MulBackward0", "ExpBackward0")] == 1
    assert Counter(label for label, _ in nodes.values())["MulBackward0"] == 2


def test_leaf_outputs():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    nodes, edges = parse(fg.viz.to_dot(x, params={"x": x}))
    assert list(nodes.values()) == [("x\n(2)", "darkolivegreen1")] and edges == []
    # a leaf output that the other output's graph also reaches is one box, joined to its AccumulateGrad
    y = (x * x).sum()
    nodes, edges = parse(fg.viz.to_dot([y, x], params={"x": x}))
    assert [label for label, c in nodes.values() if c in ("lightblue", "darkolivegreen1")] == ["()", "x\n(2)"]
    assert graph_edges(nodes, edges)[("x\n(2)", "AccumulateGrad(x\n(2))")] == 1


def test_multi_output_node_edges_carry_the_output_index():
    x = fg.arange(6.0).requires_grad_()
    a, b, c = fg.split(x, 2)
    out = a * 2.0 + c
    nodes, edges = check_against_walk(fg.viz.to_dot(out), [out])
    split = [k for k, (label, _) in nodes.items() if label == "SplitBackward0"]
    assert len(split) == 1
    assert sorted(attrs for t, _, attrs in edges if t == split[0]) == ['label="0"', 'label="2"']
    assert all(attrs is None for t, _, attrs in edges if t != split[0])


# -- saved values and attributes -----------------------------------------------------------------------
def test_show_saved():
    x, w, b, z = seeds()
    e = fg.exp(x * w)
    assert "orange" not in fg.viz.to_dot(e)
    nodes, edges = parse(fg.viz.to_dot(e, show_saved=True))
    saved = {k: label for k, (label, c) in nodes.items() if c == "orange"}
    assert sorted(saved.values()) == ["inputs[0]\n()", "inputs[1]\n()", "result\n()"]
    owners = {h: nodes[t][0] for t, h, attrs in edges if h in saved}
    assert all(attrs == "dir=none" for t, h, attrs in edges if h in saved)
    assert {saved[k]: owner for k, owner in owners.items()} == {
        "inputs[0]\n()": "MulBackward0", "inputs[1]\n()": "MulBackward0", "result\n()": "ExpBackward0"}
    # only what the rule reads is saved: x[idx] keeps idx (an index array), not x; sum keeps nothing
    m = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for picked, expected in ((m[fg.tensor([1, 0])], ["inputs[1]\n(2)"]), (m.sum(0), [])):
        labels = [label for label, c in parse(fg.viz.to_dot(picked, show_saved=True))[0].values() if c == "orange"]
        assert labels == expected


def test_show_saved_does_not_unpack_hooked_values():
    calls = []

    def pack(t):
        return t

    def unpack(t):
        calls.append(t.shape)
        return t

    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        y = (fg.exp(x) * x).sum()
    nodes, _ = parse(fg.viz.to_dot(y, show_saved=True, show_attrs=True))
    saved = sorted(label for label, c in nodes.values() if c == "orange")
    assert saved == ["inputs[0]\n(packed Tensor)\n(2)", "inputs[1]\n(packed Tensor)\n(2)",
                     "result\n(packed Tensor)\n(2)"]
    assert calls == []
    with fg.autograd.graph.save_on_cpu():
        y = fg.exp(x).sum()
    nodes, _ = parse(fg.viz.to_dot(y, show_saved=True))
    assert [label for label, c in nodes.values() if c == "orange"] == ["result\n(packed tuple)"]


def test_show_attrs():
    x, w, b, z = seeds()
    nodes, _ = parse(fg.viz.to_dot(z, show_attrs=True))
    pow_label = next(label for label, _ in nodes.values() if label.startswith("PowBackward0"))
    name, rule, *rows = pow_label.split("\n")
    assert name == "PowBackward0" and set(rule) == {"-"} and len(rule) == len(rows[0])
    assert [r.rstrip() for r in rows] == ["exponent     : 2", "exponent_type: int", "inputs[0]    : [saved tensor]"]
    assert ("AccumulateGrad", None) in nodes.values() and ("AddBackward0", None) in nodes.values()
    s = fg.tensor([[1.0, 2.0]], requires_grad=True).sum(dim=1, keepdim=True)
    label = parse(fg.viz.to_dot(s, show_attrs=True))[0]["n1"][0]
    assert [r.rstrip() for r in label.split("\n")[2:]] == ["dims   : (1,)", "keepdim: True"]


class Scale(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor, note):
        ctx.factor = factor
        ctx.note = note
        ctx.table = fg.zeros(2, 2)  # a tensor attribute is shown by its shape, on one line
        out = x * factor
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return g * ctx.factor, None, None


class SplitTwo(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2.0 + gb * 3.0


def test_custom_function_node():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Scale.apply(x, 3.0, "n" * 80).sum()
    text = fg.viz.to_dot(y, params={"x": x}, show_saved=True, show_attrs=True, max_attr_chars=20)
    nodes, edges = parse(text)
    label = next(label for label, _ in nodes.values() if label.startswith("ScaleBackward"))
    rows = [r.rstrip() for r in label.split("\n")[2:]]
    assert rows == ["factor       : 3.0", "note         : " + "n" * 17 + "...", "table        : [tensor (2, 2)]",
                    "saved_tensors: [saved tensors]"]
    saved = sorted(label for label, c in nodes.values() if c == "orange")
    assert saved == ["saved_tensors[0]\n(3)", "saved_tensors[1]\n(3)"]
    plain = fg.viz.to_dot(y, params={"x": x})
    check_against_walk(plain, [y])
    assert graph_edges(*parse(plain))[("AccumulateGrad(x\n(3))", "ScaleBackward")] == 1
    # a multi-output Function: edges leaving its node carry the output index
    a, b2 = SplitTwo.apply(x)
    out = a.sum() + b2.sum()
    nodes, edges = check_against_walk(fg.viz.to_dot(out), [out])
    node = next(k for k, (label, _) in nodes.items() if label == "SplitTwoBackward")
    assert sorted(attrs for t, _, attrs in edges if t == node) == ['label="0"', 'label="1"']


def test_second_derivative_graph():
    x, w, b, z = seeds()
    (gx,) = fg.grad(z, [x], create_graph=True)  # 2 * (x*w + b) * w
    text = fg.viz.to_dot({"dz/dx": gx}, params={"x": x, "w": w, "b": b}, show_saved=True)
    nodes, edges = check_against_walk(text, [gx])
    assert sorted(label for label, c in nodes.values() if c == "lightblue") == ["b\n()", "w\n()", "x\n()"]
    assert ("dz/dx\n()", "darkolivegreen1") in nodes.values()
    assert Counter(label for label, c in nodes.values() if c is None)["AccumulateGrad"] == 3
    # and the graph of a third derivative's input, drawn the same way
    (gxx,) = fg.grad(gx, [w], create_graph=True)
    check_against_walk(fg.viz.to_dot(gxx), [gxx])


def test_long_chain_is_walked_iteratively():
    x = fg.tensor(1.0, requires_grad=True)
    y = x
    n = 100_000
    for _ in range(n):
        y = fg.neg(y)
    text = fg.viz.to_dot(y, params={"x": x})
    assert text.count('[label="NegBackward0"]') == n
    assert text.count(" -> ") == n + 2  # chain, AccumulateGrad -> first Neg, leaf -> AccumulateGrad, last -> out
    assert f"\tn{n + 2} [label=\"x\\n()\" fillcolor=lightblue]" in text
    assert text.endswith("\tn1 -> n0\n}\n")


# -- escaping, errors, graphviz ---------------------------------------------------------------------------
WEIRD = 'w"eird\\name\nline two {}'


def test_labels_are_escaped():
    x = fg.tensor(1.0, requires_grad=True)
    text = fg.viz.to_dot({'out "1"': x * 2.0}, params={WEIRD: x})
    nodes, _ = parse(text)
    assert (WEIRD + "\n()", "lightblue") in nodes.values()
    assert ('out "1"\n()', "darkolivegreen1") in nodes.values()
    assert "\n" not in text.replace("\n\t", "").rstrip("\n").replace("{\n", "").replace("\n}", "")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_dot_renders_the_text(tmp_path):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.grad((fg.exp(x) * x).sum(), [x], create_graph=True)
    text = fg.viz.to_dot({'g "x"': g}, params={WEIRD: x}, show_saved=True, show_attrs=True)
    svg = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, check=True).stdout
    (tmp_path / "g.svg").write_bytes(svg)
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert 'w"eird\\name' in texts and "line two {}" in texts and 'g "x"' in texts
    assert "ExpBackward0" in texts and "AccumulateGrad" in texts


def test_make_dot():
    graphviz = pytest.importorskip("graphviz")
    x, w, b, z = seeds()
    params = {"x": x, "w": w, "b": b}
    dot = fg.viz.make_dot(z, params=params, show_saved=True, show_attrs=True)
    assert isinstance(dot, graphviz.Digraph)
    assert dot.source == fg.viz.to_dot(z, params=params, show_saved=True, show_attrs=True)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_make_dot_renders():
    pytest.importorskip("graphviz")
    x, w, b, z = seeds()
    dot = fg.viz.make_dot(z, params={"x": x, "w": w, "b": b}, show_saved=True, show_attrs=True)
    svg = dot.pipe(format="svg").decode()
    assert "PowBackward0" in svg and "lightblue" in svg


def test_make_dot_without_graphviz(monkeypatch):
    x, w, b, z = seeds()
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"pip install 'fgraph\[viz\]'.*pip install graphviz"):
        fg.viz.make_dot(z)
    assert "PowBackward0" in fg.viz.to_dot(z)


def test_errors():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"to_dot: the tensor \(shape \(2,\), dtype float32\) does not require grad"):
        fg.viz.to_dot(fg.tensor([1.0, 2.0]))
    with fg.no_grad():
        quiet = x * 2.0
    with pytest.raises(ValueError, match="output 1 .*does not require grad.*no_grad"):
        fg.viz.to_dot([x * 2.0, quiet])
    with pytest.raises(ValueError, match="output 'd' .*detach"):
        fg.viz.to_dot({"d": (x * 2.0).detach()})
    with pytest.raises(ValueError, match="no output tensors"):
        fg.viz.to_dot([])
    with pytest.raises(TypeError, match="MulBackward0 node; pass the tensor it produced, not its grad_fn"):
        fg.viz.to_dot((x * 2.0).grad_fn)
    with pytest.raises(TypeError, match="output 0 is a float"):
        fg.viz.to_dot([1.0])
    with pytest.raises(TypeError, match=r"params\['w'\] is a list"):
        fg.viz.to_dot(x * 2.0, params={"w": [1.0]})
    with pytest.raises(TypeError, match="params must be a dict"):
        fg.viz.to_dot(x * 2.0, params=3)


def test_example_script_writes_its_files(tmp_path):
    script = Path(__file__).resolve().parent.parent / "examples" / "graph_picture.py"
    run = subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert str(tmp_path) in run.stdout
    for stem in ("graph_seeds", "graph_mlp", "graph_second_derivative"):
        parse((tmp_path / f"{stem}.dot").read_text())
    assert "2.weight" in (tmp_path / "graph_mlp.dot").read_text()
