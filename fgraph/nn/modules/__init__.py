"""Layers by family; every module's ``__all__`` is re-exported as ``fgraph.nn.<Name>``."""
from fgraph.nn.modules.module import Module
from fgraph.nn.modules.container import *  # noqa: F401,F403
from fgraph.nn.modules.linear import *  # noqa: F401,F403
from fgraph.nn.modules.activation import *  # noqa: F401,F403
from fgraph.nn.modules.activation_more import *  # noqa: F401,F403
from fgraph.nn.modules.flatten import *  # noqa: F401,F403
from fgraph.nn.modules.conv import *  # noqa: F401,F403
from fgraph.nn.modules.pooling import *  # noqa: F401,F403
from fgraph.nn.modules.upsampling import *  # noqa: F401,F403
from fgraph.nn.modules.vision import *  # noqa: F401,F403
from fgraph.nn.modules.batchnorm import *  # noqa: F401,F403
from fgraph.nn.modules.normalization import *  # noqa: F401,F403
from fgraph.nn.modules.instancenorm import *  # noqa: F401,F403
from fgraph.nn.modules.dropout import *  # noqa: F401,F403
from fgraph.nn.modules.sparse import *  # noqa: F401,F403
from fgraph.nn.modules.rnn import *  # noqa: F401,F403
from fgraph.nn.modules.attention import *  # noqa: F401,F403
from fgraph.nn.modules.transformer import *  # noqa: F401,F403
from fgraph.nn.modules.loss import *  # noqa: F401,F403
from fgraph.nn.modules.loss_more import *  # noqa: F401,F403
