"""A CIFAR-sized ResNet-8, written once against torch's names.

``make_resnet8(lib)`` builds the model with ``lib`` = ``fgraph`` or ``torch``: the same class
text makes both, so a script can copy weights (``state_dict``) across and compare the two
libraries step for step. The layout is torchvision's ``ResNet`` with one ``BasicBlock`` per
stage, for 3×32×32 images:

* ``conv1`` (3x3, 16 channels) + ``bn1`` + ReLU;
* ``layer1``, ``layer2``, ``layer3``: one ``BasicBlock`` each, at 16, 32 and 64 channels; the
  second and third halve the resolution (stride 2) and take their shortcut through a 1x1
  convolution + BatchNorm (``downsample``);
* global average pooling, then ``fc`` = ``Linear(64, num_classes)``.

Convolutions have no bias (BatchNorm follows each). In training mode BatchNorm normalises
with the batch's statistics and updates its running statistics (buffers). Call it as
``model(x) -> logits``. Used by the benchmarks' real-model rows (``benchmarks/real_models.py``).
"""
from __future__ import annotations

from typing import Any

WIDTHS = (16, 32, 64)


def make_resnet8(lib: Any, num_classes: int = 10) -> Any:
    """A ResNet-8 module of ``lib`` (``fgraph`` or ``torch``) for ``(N, 3, 32, 32)`` images."""
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, in_planes: int, planes: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or in_planes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            shortcut = x if self.downsample is None else self.downsample(x)
            return F.relu(out + shortcut)

    class ResNet8(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, WIDTHS[0], 3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(WIDTHS[0])
            self.layer1 = nn.Sequential(BasicBlock(WIDTHS[0], WIDTHS[0], 1))
            self.layer2 = nn.Sequential(BasicBlock(WIDTHS[0], WIDTHS[1], 2))
            self.layer3 = nn.Sequential(BasicBlock(WIDTHS[1], WIDTHS[2], 2))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(WIDTHS[2], num_classes)
            for m in self.modules():  # torchvision's initialisation
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet8()
