"""Pictures of fgraph's backward graph with fgraph.viz (torchviz's make_dot for fgraph).

Draws three graphs:

1. the seeds' example ``y = x * w + b; z = y ** 2``,
2. a small MLP's graph, its leaves labelled with the parameter names,
3. the graph of a second derivative: ``fg.grad(z, [x], create_graph=True)`` returns a
   gradient that has its own graph, and that graph is what is drawn.

It always writes the DOT text (``graph_*.dot``, readable by any Graphviz tool), and
also SVG and PNG when the ``graphviz`` Python package (``pip install 'fgraph[viz]'``)
and Graphviz's ``dot`` program are installed.

Run: python examples/graph_picture.py [--out DIR] [--quick]
     (--out defaults to examples/out/; --quick skips the PNGs)
"""
import argparse
import importlib.util
import shutil
from pathlib import Path

import fgraph as fg
from fgraph import nn

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def seeds_graph():
    """``z = (x * w + b) ** 2`` at x=2, w=3, b=1, with the leaves named."""
    x = fg.tensor(2.0, requires_grad=True)
    w = fg.tensor(3.0, requires_grad=True)
    b = fg.tensor(1.0, requires_grad=True)
    z = (x * w + b) ** 2
    return {"z": z}, {"x": x, "w": w, "b": b}


def mlp_graph():
    """The loss of a 4 -> 8 -> 3 MLP on a batch of 5; leaves named as in ``named_parameters()``."""
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x, target = fg.randn(5, 4), fg.randint(0, 3, (5,))
    loss = nn.functional.cross_entropy(model(x), target)
    return {"loss": loss}, dict(model.named_parameters())


def second_derivative_graph():
    """``dz/dx`` of the seeds' example, computed with ``create_graph=True``: a tensor with its own graph."""
    outputs, params = seeds_graph()
    (dz_dx,) = fg.grad(outputs["z"], [params["x"]], create_graph=True)
    (d2z_dx2,) = fg.grad(dz_dx, [params["x"]])
    print(f"  dz/dx = {dz_dx.item():g} (2 * (x*w + b) * w = 42), d2z/dx2 = {d2z_dx2.item():g} (2 * w**2 = 18)")
    return {"dz/dx": dz_dx}, params


def render(stem, outputs, params, out_dir, formats):
    """Write ``stem.dot`` and, when graphviz and dot are available, ``stem.<format>`` for each format."""
    written = []
    dot_path = out_dir / f"{stem}.dot"
    dot_path.write_text(fg.viz.to_dot(outputs, params=params))
    written.append(dot_path)
    if formats:
        graph = fg.viz.make_dot(outputs, params=params)
        for fmt in formats:
            path = out_dir / f"{stem}.{fmt}"
            path.write_bytes(graph.pipe(format=fmt))
            written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: examples/out/)")
    parser.add_argument("--quick", action="store_true", help="same graphs, SVG only (no PNG)")
    args = parser.parse_args()
    out_dir = args.out
    out_dir.mkdir(parents=True, exist_ok=True)

    have_graphviz = importlib.util.find_spec("graphviz") is not None
    have_dot = shutil.which("dot") is not None
    formats = (["svg"] if args.quick else ["svg", "png"]) if have_graphviz and have_dot else []
    if not formats:
        found = (("the graphviz package", have_graphviz), ("the dot program", have_dot))
        missing = [name for name, ok in found if not ok]
        print(f"({' and '.join(missing)} not found: writing DOT text only; pip install 'fgraph[viz]' and "
              "Graphviz to get pictures, or run: dot -Tsvg FILE.dot -o FILE.svg)")

    written = []
    print("1. the seeds' example: y = x * w + b, z = y ** 2")
    written += render("graph_seeds", *seeds_graph(), out_dir, formats)
    print("2. an MLP's loss, leaves named by model.named_parameters()")
    written += render("graph_mlp", *mlp_graph(), out_dir, formats)
    print("3. the graph of dz/dx taken with create_graph=True (a second derivative's graph)")
    written += render("graph_second_derivative", *second_derivative_graph(), out_dir, formats)

    print(f"wrote {len(written)} files to {out_dir}:")
    for path in written:
        print(f"  {path.name}")


if __name__ == "__main__":
    main()
