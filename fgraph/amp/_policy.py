"""Which ops autocast runs in the low dtype, in float32, or at their inputs' widest type: PyTorch's lists.

PyTorch's autocast lists name ATen ops; here they are mapped to fgraph's names: registry primitives
(``matmul``, ``conv_general``...) and the public functions that carry an ``autocast_policy`` decorator
(composites PyTorch treats as one op: ``mse_loss``, ``cross_entropy``...). The lists follow PyTorch's
documented CPU and CUDA policies (torch.amp, "Autocast Op Reference"); ops on neither list run in
whatever dtype their inputs have, as in PyTorch.
"""
from __future__ import annotations

LOWER = "lower"
FP32 = "fp32"
PROMOTE = "promote"

_LOWER_COMMON = {
    "matmul", "linear", "conv_general", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "bmm", "baddbmm", "addmm", "addbmm", "prelu", "scaled_dot_product_attention",
    "linalg_vecdot",
}
_LOWER_CUDA_ONLY = {"addmv", "addr", "einsum", "mv", "dot", "vdot", "chain_matmul", "multi_dot"}

_FP32_LOSSES = {
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "ctc_loss",
}
_FP32_CPU = _FP32_LOSSES | {
    "prod", "prod_dim", "cdist", "trace", "polar", "quantile", "nanquantile", "view_as_complex", "linalg_cholesky",
    "cholesky_inverse", "cholesky_solve", "linalg_inv", "linalg_pinv", "linalg_qr", "linalg_svd", "linalg_eig",
    "linalg_eigh", "linalg_solve", "linalg_solve_triangular", "linalg_lu_factor", "linalg_det", "linalg_slogdet",
    "linalg_matrix_exp", "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
    "replication_pad3d", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "grid_sample", "fft_c2c", "fft_r2c",
    "fft_c2r",
}
_FP32_CUDA = _FP32_LOSSES | {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "pow_tensor", "softplus", "layer_norm", "group_norm", "linalg_vector_norm", "norm",
    "cosine_similarity", "dist", "pdist", "cdist", "renorm", "logsumexp", "prod", "prod_dim", "cumprod", "cumsum",
    "sum", "_softmax", "_log_softmax", "softmax", "log_softmax",
}
_PROMOTE = {"addcdiv", "addcmul", "atan2", "bilinear", "linalg_cross", "tensordot", "index_put", "scatter_add",
            "stack", "cat"}

POLICIES = {
    "cpu": {**{n: LOWER for n in _LOWER_COMMON}, **{n: FP32 for n in _FP32_CPU}, **{n: PROMOTE for n in _PROMOTE}},
    "cuda": {**{n: LOWER for n in _LOWER_COMMON | _LOWER_CUDA_ONLY}, **{n: FP32 for n in _FP32_CUDA},
             **{n: PROMOTE for n in _PROMOTE}},
}
POLICIES["gpu"] = POLICIES["cuda"]
