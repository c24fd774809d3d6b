"""``fgraph.optim``: PyTorch's optimizers over returned gradients, each group's update one jitted kernel.

Example:
    >>> import fgraph as fg
    >>> model = fg.nn.Linear(2, 1)
    >>> opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    >>> for _ in range(3):
    ...     loss = ((model(fg.ones(8, 2)) - 1.0) ** 2).mean()
    ...     opt.step(loss.backward())              # rebinds model.weight and model.bias
    >>> len(opt.state)
    2
"""
from fgraph.optim.optimizer import Optimizer
from fgraph.optim.sgd import SGD
from fgraph.optim.adam import Adam, AdamW
from fgraph.optim.rmsprop import RMSprop
from fgraph.optim.adagrad import Adagrad
from fgraph.optim.lbfgs import LBFGS
from fgraph.optim.adadelta import Adadelta
from fgraph.optim.adamax import Adamax
from fgraph.optim.nadam import NAdam
from fgraph.optim.radam import RAdam
from fgraph.optim.asgd import ASGD
from fgraph.optim.rprop import Rprop
from fgraph.optim import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS", "Adadelta", "Adamax", "NAdam",
           "RAdam", "ASGD", "Rprop"]
