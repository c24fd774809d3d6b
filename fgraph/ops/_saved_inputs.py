"""Which inputs an op's node saves: its rule's ``saved_positions`` applied to one call's arguments.

Example:
    >>> kept_by({0: (1,)}, ("a", "b"), (None, object()))  # input 0 is read only when input 1 needs a gradient
    ('a', None)
"""
from __future__ import annotations

from typing import Any, Optional

__all__ = ["kept_by", "pair_keep"]


def pair_keep(keep: Any) -> Optional[tuple]:
    """For a two-input call, which inputs to save: ``table[a has no edge][b has no edge]`` is
    ``(save a, save b)``, ``fgraph.ops._declare._kept``'s answer worked out once per op instead of per recorded node."""
    if keep is None:
        return None
    table = []
    for a_edge in (True, None):
        row = []
        for b_edge in (True, None):
            try:
                saved = kept_by(keep, (0, 1), (a_edge, b_edge))
            except IndexError:  # positions beyond two inputs: apply_binary never meets this op
                return None
            row.append((saved[0] is not None, saved[1] is not None))
        table.append(tuple(row))
    return tuple(table)


def kept_by(keep: Any, args: tuple, edges: tuple) -> tuple:
    """``args`` with ``None`` for each input the rule does not read. ``keep``: an op's ``saved_positions``, a
    slice or positions (always kept), or ``{position: inputs}`` (kept when one of those inputs has an edge)."""
    if type(keep) is dict:  # plain loops: this runs for nodes recorded through apply_op
        kept = []
        for i, a in enumerate(args):
            wanted = keep.get(i)
            if wanted is not None:
                for j in wanted:
                    if edges[j] is not None:
                        break
                else:
                    a = None
            else:
                a = None
            kept.append(a)
        return tuple(kept)
    if isinstance(keep, slice):
        keep = range(len(args))[keep]
    return tuple(a if i in keep else None for i, a in enumerate(args))
