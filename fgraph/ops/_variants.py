"""Node-name variants of a primitive: the same kernels and rule, recorded under another PyTorch name.

PyTorch names a node after the ATen function that made it, so one fgraph primitive can
stand for several of its nodes: ``x[0]`` records ``SelectBackward0`` and ``x[1:]``
``SliceBackward0`` in PyTorch, while both are fgraph's indexing primitive. A variant is an
unregistered :class:`OpDef` that shares its primitive's forward kernels and rule kernels
(one compilation serves both), so it adds no op to the registry (the crosscheck still
checks the primitive once) and costs nothing at run time.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(6.0, requires_grad=True).reshape(2, 3)
    >>> x[0].grad_fn.name(), x[1:].grad_fn.name(), x[fg.tensor([0])].grad_fn.name()
    ('SelectBackward0', 'SliceBackward0', 'IndexBackward0')
"""
from __future__ import annotations

from fgraph.ops._declare import OpDef

__all__ = ["node_variant"]


def node_variant(op: OpDef, node_name: str) -> OpDef:
    """An unregistered copy of ``op`` whose nodes are named ``node_name``, sharing ``op``'s kernels.

    Everything that shapes a kernel is copied too: a kernel the variant compiles serves ``op`` as well (a
    variant without ``real_only`` once left ``fg.clamp``'s cached kernel computing on complex inputs)."""
    saved = op.save_inputs if op.saved_positions is None else op.saved_positions
    variant = OpDef(op.name, op.forward, op.rule, params=op.param_names, save_inputs=saved,
                    save_result=op.save_result, differentiable=op.differentiable, num_outputs=op.num_outputs,
                    node_name=node_name, hint=op.hint, fuse_rule=op.fuse_rule, real_only=op.real_only,
                    complex_fix=op.complex_fix, tangent=op.tangent)
    variant.Params = op.Params
    variant._kernels = op._kernels
    variant._rule_kernels = op._rule_kernels
    return variant
