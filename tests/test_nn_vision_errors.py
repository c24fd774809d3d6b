"""User mistakes in the 3-D/lp pools and the vision ops raise an OpError naming the function (no JAX traceback).

Only shapes and static arguments are checked, before any kernel runs, so these tests compile nothing.
"""
import warnings

import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.errors import OpError

x4 = fg.ones(1, 2, 3, 3)

MISUSES = [
    ("pixel_shuffle", lambda: F.pixel_shuffle(fg.ones(1, 3, 2, 2), 2)),
    ("pixel_shuffle", lambda: F.pixel_shuffle(fg.ones(4, 2), 2)),
    ("pixel_unshuffle", lambda: F.pixel_unshuffle(fg.ones(1, 1, 3, 4), 2)),
    ("unfold", lambda: F.unfold(fg.ones(1, 1, 2, 2, 2), 2)),
    ("unfold", lambda: F.unfold(x4, 4)),
    ("fold", lambda: F.fold(fg.ones(1, 5, 4), (3, 3), 2)),
    ("fold", lambda: F.fold(fg.ones(1, 4, 3), (3, 3), 2)),
    ("affine_grid", lambda: F.affine_grid(fg.ones(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False)),
    ("affine_grid", lambda: F.affine_grid(fg.ones(2, 2, 3), (1, 1, 2, 2), align_corners=False)),
    ("grid_sample", lambda: F.grid_sample(x4, fg.ones(1, 2, 2, 3), align_corners=False)),
    ("grid_sample", lambda: F.grid_sample(x4, fg.ones(2, 2, 2, 2), align_corners=False)),
    ("grid_sample", lambda: F.grid_sample(x4, fg.ones(1, 2, 2, 2), mode="bicubic", align_corners=False)),
    ("grid_sample", lambda: F.grid_sample(x4, fg.ones(1, 2, 2, 2), padding_mode="wrap", align_corners=False)),
    ("grid_sample", lambda: F.grid_sample(x4, fg.ones(1, 2, 2, 2).long(), align_corners=False)),
    ("local_response_norm", lambda: F.local_response_norm(fg.ones(2, 3), 2)),
    ("local_response_norm", lambda: F.local_response_norm(x4, 0)),
    ("lp_pool2d", lambda: F.lp_pool2d(x4, "2", 2)),
    ("max_pool3d", lambda: F.max_pool3d(x4[0, 0], 2)),
    ("avg_pool3d", lambda: F.avg_pool3d(fg.ones(1, 1, 2, 2, 2), 3)),
    ("adaptive_avg_pool3d", lambda: F.adaptive_avg_pool3d(x4[0], (1, 0, 1))),
]


@pytest.mark.parametrize("name,call", MISUSES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MISUSES)])
def test_misuse_names_the_function(name, call):
    with pytest.raises(OpError, match=name):
        call()


def test_align_corners_default_warns_like_torch():
    with pytest.warns(UserWarning, match="align_corners"):
        F.affine_grid(fg.zeros(1, 2, 3), (1, 1, 2, 2))


def test_upsample_warns_deprecated():
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample(fg.ones(1, 1, 2), scale_factor=2)


def test_nn_pdist_is_top_level_pdist():
    a = fg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.pdist(a).tolist() == fg.pdist(a).tolist()
