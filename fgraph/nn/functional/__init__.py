"""``fgraph.nn.functional``: PyTorch's layer functions on fgraph Tensors.

Each sub-module groups one family; this package re-exports their ``__all__``.
"""
# One line per family module (each defines __all__).
from fgraph.nn.functional.padding import *  # noqa
from fgraph.nn.functional.activation import *  # noqa: F401,F403
from fgraph.nn.functional.basic import *  # noqa: F401,F403
from fgraph.nn.functional.embedding_bag import *  # noqa: F401,F403
from fgraph.nn.functional.loss import *  # noqa: F401,F403
from fgraph.nn.functional.normalization import *  # noqa: F401,F403
from fgraph.nn.functional.attention import *  # noqa: F401,F403
from fgraph.nn.functional.multihead import *  # noqa: F401,F403
from fgraph.nn.functional.conv import *  # noqa: F401,F403
from fgraph.nn.functional.pooling import *  # noqa: F401,F403
from fgraph.nn.functional.sampling import *  # noqa: F401,F403
from fgraph.nn.functional.activation_more import *  # noqa: F401,F403
from fgraph.nn.functional.activation_random import *  # noqa: F401,F403
from fgraph.nn.functional.loss_more import *  # noqa: F401,F403
from fgraph.nn.functional.ctc import *  # noqa: F401,F403
from fgraph.nn.functional.vision import *  # noqa: F401,F403
