"""How much of the commonly used PyTorch API fgraph has: ``python -m fgraph.coverage`` writes
``docs/torch-coverage.md`` (needs PyTorch, which checks that every listed name is real).

**Commonly used** means the names in :data:`COMMON` below, curated by hand: the functions,
Tensor methods and attributes that ordinary research code (model definitions, training
loops, losses, data shuffling, linear algebra in papers' methods sections) calls, taken
from the main sections of PyTorch's reference (tensor creation, indexing/slicing/joining,
random sampling, pointwise, reduction, comparison and other ops, BLAS/LAPACK,
``torch.linalg``, ``torch.special``, ``torch.nn.functional`` and the ``Tensor`` page),
leaving out what research code rarely touches (``torch.Tensor.map_``, ``torch.lobpcg``,
``torch.nn.functional.fractional_max_pool2d``, ...). It is deliberately not all of
``dir(torch)`` (about 1,200 names, many of them private helpers or aliases).

Each name is **present** (fgraph has it under the same name in the matching namespace),
**deliberately absent** (fgraph leaves it out by design: the reason is listed in
:data:`DELIBERATELY_ABSENT`; in-place ``name_`` methods are absent as a rule, since
fgraph tensors are immutable), or **missing**. The report also lists the backward node
names that differ between fgraph and PyTorch for a few common calls (:data:`NODE_PROBES`),
computed by running both. Rerun it after adding ops; a test checks the committed report
is current.

Example:
    >>> from fgraph.coverage import classify
    >>> classify("torch", "exp"), classify("torch.Tensor", "add_")[0]
    (('present', ''), 'deliberately absent')
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

__all__ = ["COMMON", "DELIBERATELY_ABSENT", "NODE_PROBES", "classify", "report", "render", "main"]

DOC = Path(__file__).resolve().parent.parent / "docs" / "torch-coverage.md"

#: PyTorch namespace -> (fgraph counterpart as a dotted path, the commonly used names).
COMMON: dict[str, tuple[str, tuple[str, ...]]] = {
    "torch": ("fgraph", tuple("""
        tensor as_tensor from_numpy from_dlpack scalar_tensor zeros ones full empty arange linspace logspace eye
        zeros_like ones_like full_like empty_like complex polar tril_indices triu_indices meshgrid cartesian_prod
        combinations stft istft hann_window hamming_window blackman_window bartlett_window kaiser_window
        rand randn randint randperm rand_like randn_like randint_like normal bernoulli multinomial poisson
        manual_seed seed initial_seed get_rng_state set_rng_state Generator
        cat concat concatenate stack hstack vstack dstack column_stack split split_with_sizes chunk tensor_split
        hsplit vsplit dsplit unbind reshape flatten unflatten ravel squeeze unsqueeze transpose permute movedim
        moveaxis swapaxes swapdims t narrow select flip fliplr flipud rot90 roll tile repeat_interleave broadcast_to
        broadcast_tensors broadcast_shapes atleast_1d atleast_2d atleast_3d diag diagonal diag_embed diagflat tril
        triu block_diag clone view_as_real view_as_complex
        gather scatter scatter_add scatter_reduce index_select index_add index_copy index_fill index_put masked_fill
        masked_select masked_scatter take take_along_dim where nonzero argwhere searchsorted bucketize unique
        unique_consecutive bincount histc histogram
        abs absolute neg negative add sub subtract mul multiply div divide true_divide floor_divide remainder fmod
        pow float_power exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square sin cos tan asin acos atan atan2
        arctan2 sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv lgamma digamma polygamma mvlgamma
        sign sgn signbit floor ceil round trunc frac clamp clip maximum minimum fmax fmin hypot reciprocal lerp
        addcmul addcdiv xlogy logaddexp logaddexp2 copysign nan_to_num heaviside deg2rad rad2deg i0 sinc relu
        softmax log_softmax dropout real imag conj angle
        eq ne lt le gt ge equal allclose isclose isnan isinf isfinite isneginf isposinf isreal logical_and
        logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not is_tensor
        is_floating_point is_complex numel
        sum mean prod std var std_mean var_mean max min amax amin aminmax argmax argmin all any logsumexp norm
        median nanmedian mode quantile nanquantile nansum nanmean count_nonzero cumsum cumprod cummax cummin
        logcumsumexp diff trace dist renorm
        sort argsort msort topk kthvalue
        matmul mm bmm mv dot vdot outer ger inner tensordot kron einsum addmm addbmm baddbmm addmv addr
        chain_matmul cross cdist cholesky det logdet slogdet inverse pinverse svd qr lu triangular_solve
        cholesky_solve cholesky_inverse matrix_power matrix_exp trapezoid cumulative_trapezoid corrcoef cov
        no_grad enable_grad set_grad_enabled inference_mode is_grad_enabled is_inference_mode_enabled compile save
        load get_default_dtype set_default_dtype promote_types result_type can_cast finfo iinfo vmap
        float32 float64 float16 bfloat16 int8 int16 int32 int64 uint8 bool complex64 complex128
        as_strided empty_strided sparse_coo_tensor sparse_csr_tensor quantize_per_tensor dequantize
        set_default_tensor_type Stream Event set_num_threads get_num_threads from_file frombuffer
        device get_default_device set_default_device
    """.split())),
    "torch.cuda": ("fgraph.cuda", tuple("""
        is_available device_count current_device set_device synchronize get_device_name get_device_capability
        manual_seed manual_seed_all seed initial_seed empty_cache is_bf16_supported memory_allocated
        max_memory_allocated reset_peak_memory_stats amp
    """.split())),
    "torch.accelerator": ("fgraph.accelerator", tuple("""
        is_available current_accelerator device_count current_device_index set_device_index synchronize
    """.split())),
    "torch.linalg": ("fgraph.linalg", tuple("""
        norm vector_norm matrix_norm det slogdet inv inv_ex pinv solve solve_ex solve_triangular lstsq cholesky
        cholesky_ex qr eig eigvals eigh eigvalsh svd svdvals lu lu_factor lu_solve matrix_rank matrix_power
        matrix_exp cond cross vecdot multi_dot matmul diagonal householder_product tensorinv tensorsolve vander
    """.split())),
    "torch.special": ("fgraph.special", tuple("""
        expit logit erf erfc erfinv erfcx log_ndtr ndtr ndtri gammaln digamma psi polygamma multigammaln i0 i0e i1
        i1e xlogy xlog1py logsumexp softmax log_softmax log1p expm1 exp2 sinc round entr zeta bessel_j0 bessel_j1
    """.split())),
    "torch.fft": ("fgraph.fft", tuple("""
        fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft hfft2 ihfft2 hfftn ihfftn
        fftfreq rfftfreq fftshift ifftshift
    """.split())),
    "torch.distributions": ("fgraph.distributions", tuple("""
        Distribution ExponentialFamily Bernoulli Beta Binomial Categorical Cauchy Chi2 ContinuousBernoulli Dirichlet
        Exponential FisherSnedecor Gamma GeneralizedPareto Geometric Gumbel HalfCauchy HalfNormal Independent
        InverseGamma Kumaraswamy LKJCholesky Laplace LogNormal LogisticNormal LowRankMultivariateNormal
        MixtureSameFamily Multinomial MultivariateNormal NegativeBinomial Normal OneHotCategorical
        OneHotCategoricalStraightThrough Pareto Poisson RelaxedBernoulli RelaxedOneHotCategorical StudentT Uniform
        VonMises Weibull Wishart TransformedDistribution kl_divergence register_kl biject_to transform_to
        constraints transforms AbsTransform AffineTransform CatTransform ComposeTransform CorrCholeskyTransform
        CumulativeDistributionTransform ExpTransform IndependentTransform LowerCholeskyTransform
        PositiveDefiniteTransform PowerTransform ReshapeTransform SigmoidTransform SoftplusTransform TanhTransform
        SoftmaxTransform StackTransform StickBreakingTransform Transform identity_transform
    """.split())),
    "torch.nn.utils": ("fgraph.nn.utils", tuple("""
        clip_grad_norm_ clip_grad_value_ clip_grads_with_norm_ get_total_norm parameters_to_vector
        vector_to_parameters weight_norm remove_weight_norm spectral_norm remove_spectral_norm parametrize
        parametrizations rnn
    """.split())),
    "torch.nn.utils.parametrize": ("fgraph.nn.utils.parametrize", tuple("""
        register_parametrization remove_parametrizations is_parametrized cached transfer_parametrizations_and_params
    """.split())),
    "torch.nn.utils.parametrizations": ("fgraph.nn.utils.parametrizations", tuple("""
        weight_norm spectral_norm orthogonal
    """.split())),
    "torch.nn.utils.rnn": ("fgraph.nn.utils.rnn", tuple("""
        PackedSequence pack_padded_sequence pad_packed_sequence pack_sequence pad_sequence unpad_sequence
        unpack_sequence
    """.split())),
    "torch.optim": ("fgraph.optim", tuple("""
        Optimizer SGD Adam AdamW Adadelta Adagrad Adamax ASGD LBFGS NAdam RAdam RMSprop Rprop SparseAdam lr_scheduler
    """.split())),
    "torch.utils.data": ("fgraph.utils.data", tuple("""
        Dataset IterableDataset TensorDataset StackDataset ConcatDataset ChainDataset Subset random_split DataLoader
        default_collate default_convert get_worker_info Sampler SequentialSampler RandomSampler SubsetRandomSampler
        WeightedRandomSampler BatchSampler DistributedSampler
    """.split())),
    "torch.amp": ("fgraph.amp", tuple("""
        autocast GradScaler custom_fwd custom_bwd is_autocast_available
    """.split())),
    "torch.nn.functional": ("fgraph.nn.functional", tuple("""
        linear bilinear relu relu6 leaky_relu elu selu celu gelu silu mish softplus softsign tanh sigmoid hardtanh
        hardsigmoid hardswish logsigmoid tanhshrink softshrink hardshrink threshold glu prelu rrelu softmax
        log_softmax softmin gumbel_softmax normalize dropout dropout1d dropout2d dropout3d alpha_dropout embedding
        embedding_bag one_hot pad interpolate upsample grid_sample affine_grid pixel_shuffle pixel_unshuffle conv1d
        conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d unfold fold avg_pool1d avg_pool2d
        avg_pool3d max_pool1d max_pool2d max_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
        adaptive_max_pool1d adaptive_max_pool2d lp_pool1d lp_pool2d batch_norm layer_norm group_norm
        instance_norm local_response_norm rms_norm scaled_dot_product_attention mse_loss l1_loss smooth_l1_loss
        huber_loss cross_entropy nll_loss binary_cross_entropy binary_cross_entropy_with_logits kl_div
        poisson_nll_loss gaussian_nll_loss cosine_similarity pairwise_distance pdist cosine_embedding_loss
        margin_ranking_loss hinge_embedding_loss triplet_margin_loss multilabel_margin_loss
        multilabel_soft_margin_loss multi_margin_loss soft_margin_loss ctc_loss
    """.split())),
    "torch.Tensor": ("fgraph.Tensor", tuple("""
        shape dtype device ndim T mT H mH requires_grad grad_fn is_leaf data real imag stft istft
        size dim numel nelement element_size item tolist numpy detach requires_grad_ backward register_hook to cpu
        float double half bfloat16 int long bool short byte char type type_as is_floating_point is_complex
        contiguous is_contiguous clone view view_as reshape reshape_as expand expand_as repeat repeat_interleave
        tile flatten unflatten squeeze unsqueeze transpose permute t movedim swapaxes narrow select unbind split
        chunk tensor_split split_with_sizes hsplit vsplit dsplit flip roll rot90 diag diagonal tril triu gather
        scatter scatter_add scatter_reduce index_select index_add index_copy index_fill index_put masked_fill
        masked_select masked_scatter take take_along_dim nonzero where abs neg exp log log1p expm1 sqrt rsqrt square
        pow sin cos tan tanh sigmoid relu softmax log_softmax clamp clip sign floor ceil round trunc frac reciprocal
        add sub mul div remainder fmod matmul mm bmm mv dot outer sum mean prod std var max min amax amin argmax
        argmin all any logsumexp norm cumsum cumprod sort argsort topk median mode kthvalue unique eq ne lt le gt
        ge isnan isinf isfinite logical_not allclose equal new_zeros new_ones new_full new_empty new_tensor lerp
        addcmul erf atan2 maximum minimum nan_to_num bernoulli multinomial cross
        add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_ normal_ uniform_ masked_fill_ index_put_ scatter_ fill_diagonal_
        is_cuda get_device
        grad retain_grad retains_grad cuda stride storage storage_offset data_ptr untyped_storage share_memory_
        is_shared pin_memory is_pinned as_strided to_sparse is_sparse to_dense q_scale int_repr dequantize
        record_stream
    """.split())),
}

_IMMUTABLE = "gradients are returned (grads = loss.backward(); grads[x]), never stored on tensors"
_STRIDES = "fgraph tensors are immutable JAX arrays without user-visible storage or strides"
_SPARSE = "sparse layouts: JAX's are experimental (jax.experimental.sparse); fgraph is dense"
_QUANTIZED = "quantized tensors: no JAX counterpart"
_STREAMS = "CUDA streams and events: XLA schedules the device work"

#: ``(namespace, name) -> reason`` for commonly used names fgraph leaves out by design.
#: In-place ``name_`` methods are absent as a rule (see :func:`classify`).
DELIBERATELY_ABSENT: dict[tuple[str, str], str] = {
    ("torch.Tensor", "grad"): _IMMUTABLE,
    ("torch.Tensor", "retain_grad"): _IMMUTABLE + "; every tensor's gradient can be asked for",
    ("torch.Tensor", "retains_grad"): _IMMUTABLE,
    ("torch.Tensor", "stride"): _STRIDES, ("torch.Tensor", "storage"): _STRIDES,
    ("torch.Tensor", "storage_offset"): _STRIDES, ("torch.Tensor", "data_ptr"): _STRIDES,
    ("torch.Tensor", "untyped_storage"): _STRIDES, ("torch.Tensor", "is_shared"): _STRIDES,
    ("torch.Tensor", "pin_memory"): "host memory pinning is JAX's business", ("torch.Tensor", "is_pinned"): _STRIDES,
    ("torch.Tensor", "as_strided"): _STRIDES, ("torch", "as_strided"): _STRIDES, ("torch", "empty_strided"): _STRIDES,
    ("torch", "from_file"): _STRIDES + "; load arrays with NumPy and fg.from_numpy",
    ("torch", "frombuffer"): "shares the caller's writable buffer; fg.from_numpy(np.frombuffer(...)) copies",
    ("torch.Tensor", "to_sparse"): _SPARSE, ("torch.Tensor", "is_sparse"): _SPARSE,
    ("torch.Tensor", "to_dense"): _SPARSE, ("torch", "sparse_coo_tensor"): _SPARSE,
    ("torch", "sparse_csr_tensor"): _SPARSE, ("torch.optim", "SparseAdam"): _SPARSE + " (it takes sparse gradients)",
    ("torch.Tensor", "q_scale"): _QUANTIZED, ("torch.Tensor", "int_repr"): _QUANTIZED,
    ("torch.Tensor", "dequantize"): _QUANTIZED, ("torch", "quantize_per_tensor"): _QUANTIZED,
    ("torch", "dequantize"): _QUANTIZED,
    ("torch.Tensor", "record_stream"): _STREAMS, ("torch", "Stream"): _STREAMS, ("torch", "Event"): _STREAMS,
    ("torch", "set_num_threads"): "XLA sizes its own thread pools (XLA_FLAGS)",
    ("torch", "get_num_threads"): "XLA sizes its own thread pools (XLA_FLAGS)",
    ("torch", "set_default_tensor_type"): "deprecated in PyTorch; use fg.set_default_dtype",
}
_IN_PLACE = "in-place form: fgraph tensors are immutable; use the out-of-place op and rebind the name"


def _fgraph_namespace(path: str) -> Optional[Any]:
    """The fgraph object at a dotted path (``fgraph.special`` may not exist yet: ``None``)."""
    module, _, attr = path.rpartition(".") if path.endswith(".Tensor") else (path, "", "")
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(obj, attr, None) if attr else obj


def _has(obj: Optional[Any], name: str) -> bool:
    return obj is not None and (name in getattr(obj, "__dict__", {}) or hasattr(obj, name))


def classify(namespace: str, name: str) -> tuple[str, str]:
    """``(status, reason)`` of a PyTorch name: ``'present'``, ``'deliberately absent'`` or ``'missing'``."""
    target = _fgraph_namespace(COMMON[namespace][0])
    if _has(target, name):
        return "present", ""
    reason = DELIBERATELY_ABSENT.get((namespace, name))
    if reason is not None:
        return "deliberately absent", reason
    if name.endswith("_") and not name.startswith("_"):
        return "deliberately absent", _IN_PLACE
    return "missing", ""


def report() -> dict[str, dict[str, list]]:
    """``{namespace: {status: [name or (name, reason)]}}`` over :data:`COMMON`, names sorted."""
    out: dict[str, dict[str, list]] = {}
    for namespace, (_, names) in COMMON.items():
        groups: dict[str, list] = {"present": [], "deliberately absent": [], "missing": []}
        for name in sorted(set(names)):
            status, reason = classify(namespace, name)
            groups[status].append((name, reason) if reason else name)
        out[namespace] = groups
    return out


# -- node-name probes: the same call in fgraph and PyTorch ---------------------------------------------------------
def _x(ns: Any) -> Any:
    return ns.ones(3, 4, requires_grad=True)


def _layer_norm(ns: Any, F: Any) -> Any:
    return F.layer_norm(_x(ns), (4,))


def _cross_entropy(ns: Any, F: Any) -> Any:
    return F.cross_entropy(_x(ns), ns.tensor([0, 1, 3]))


def _mse_loss(ns: Any, F: Any) -> Any:
    return F.mse_loss(_x(ns), ns.zeros(3, 4))


def _nll_loss(ns: Any, F: Any) -> Any:
    return F.nll_loss(_x(ns), ns.tensor([0, 1, 3]))


def _bce_with_logits(ns: Any, F: Any) -> Any:
    return F.binary_cross_entropy_with_logits(_x(ns), ns.zeros(3, 4))


def _linear(ns: Any, F: Any) -> Any:
    return F.linear(_x(ns), ns.ones(5, 4, requires_grad=True), ns.ones(5, requires_grad=True))


def _softmax(ns: Any, F: Any) -> Any:
    return F.softmax(_x(ns), dim=-1)


def _gelu(ns: Any, F: Any) -> Any:
    return F.gelu(_x(ns))


def _rot90(ns: Any, F: Any) -> Any:
    return ns.rot90(_x(ns), 1, (0, 1))


def _index(ns: Any, F: Any) -> Any:
    return _x(ns)[0, 1:]


def _batched_matmul(ns: Any, F: Any) -> Any:
    return ns.ones(2, 3, 4, requires_grad=True) @ ns.ones(2, 4, 5, requires_grad=True)


def _norm(ns: Any, F: Any) -> Any:
    return ns.linalg.vector_norm(_x(ns))


def _conv2d(ns: Any, F: Any) -> Any:
    return F.conv2d(ns.ones(1, 2, 5, 5, requires_grad=True), ns.ones(3, 2, 3, 3, requires_grad=True))


#: ``(call, probe)``: ``probe(ns, F)`` runs the call with ``ns`` = fgraph or torch and its ``nn.functional``.
NODE_PROBES: tuple[tuple[str, Callable[[Any, Any], Any]], ...] = (
    ("F.layer_norm(x, (4,))", _layer_norm), ("F.cross_entropy(x, target)", _cross_entropy),
    ("F.nll_loss(x, target)", _nll_loss), ("F.mse_loss(x, y)", _mse_loss),
    ("F.binary_cross_entropy_with_logits(x, y)", _bce_with_logits), ("F.linear(x, w, b)", _linear),
    ("F.softmax(x, dim=-1)", _softmax), ("F.gelu(x)", _gelu), ("F.conv2d(x, w)", _conv2d),
    ("rot90(x)", _rot90), ("x[0, 1:]", _index), ("a @ b (3-D batches)", _batched_matmul),
    ("linalg.vector_norm(x)", _norm),
)


def _node_chain(t: Any, depth: int = 3) -> str:
    """The first ``depth`` node names along the first edges from ``t.grad_fn``."""
    names, node = [], t.grad_fn
    while node is not None and len(names) < depth:
        names.append(type(node).__name__)
        edges = [e for e in node.next_functions if e[0] is not None]
        node = edges[0][0] if edges else None
        if node is not None and type(node).__name__ == "AccumulateGrad":
            break
    return " ← ".join(names)


def node_differences() -> list[tuple[str, str, str]]:
    """``(call, fgraph's nodes, PyTorch's nodes)`` for every probe whose outermost node names differ."""
    import torch
    import torch.nn.functional as torch_F

    import fgraph as fg
    import fgraph.nn.functional as fg_F

    out = []
    for call, probe in NODE_PROBES:
        mine, theirs = probe(fg, fg_F), probe(torch, torch_F)
        if mine.grad_fn.name() != type(theirs.grad_fn).__name__:
            out.append((call, _node_chain(mine), _node_chain(theirs)))
    return out


# -- the document -------------------------------------------------------------------------------------------------------
def _check_names_exist() -> None:
    """Every curated name must be a real PyTorch name (so the list cannot drift into fiction)."""
    import torch

    unknown = []
    for namespace, (_, names) in COMMON.items():
        obj = torch.Tensor if namespace == "torch.Tensor" else importlib.import_module(namespace)
        unknown += [f"{namespace}.{n}" for n in names if not hasattr(obj, n)]
    unknown += [f"{ns}.{n} (DELIBERATELY_ABSENT)" for ns, n in DELIBERATELY_ABSENT if n not in COMMON[ns][1]]
    if unknown:
        raise SystemExit(f"fgraph.coverage: names not in PyTorch {torch.__version__} or not curated: {unknown}")


def _names(items: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in items) if items else "(none)"


def render() -> str:
    """The Markdown report (needs PyTorch for the name check and the node-name probes)."""
    _check_names_exist()
    data = report()
    lines = [
        "# PyTorch API coverage",
        "",
        "<!-- Generated by `python -m fgraph.coverage` (needs PyTorch); do not edit by hand. -->",
        "",
        "Which of PyTorch's **commonly used** names fgraph has, namespace by namespace. \"Commonly used\" is",
        "the curated list in `fgraph/coverage.py` (`COMMON`): what ordinary research code calls, from the main",
        "sections of PyTorch's reference, not all of `dir(torch)`. A name is *present* when fgraph has it",
        "under the same name in the matching namespace (`fgraph`, `fgraph.linalg`, `fgraph.special`, `fgraph.fft`, `fgraph.amp`, `fgraph.distributions`, `fgraph.nn.utils`,",
        "`fgraph.nn.functional`, `fgraph.Tensor`), *deliberately absent* when fgraph leaves it out by design",
        "(reason given; in-place `name_` methods as a rule: tensors are immutable), else *missing*.",
        "",
        "| namespace | commonly used | present | deliberately absent | missing |",
        "|---|---:|---:|---:|---:|",
    ]
    for namespace, groups in data.items():
        counts = [len(groups[k]) for k in ("present", "deliberately absent", "missing")]
        lines.append(f"| `{namespace}` | {sum(counts)} | " + " | ".join(map(str, counts)) + " |")
    for namespace, groups in data.items():
        lines += ["", f"## `{namespace}` → `{COMMON[namespace][0]}`", ""]
        lines += [f"**Present ({len(groups['present'])}):** {_names(groups['present'])}", ""]
        lines += [f"**Missing ({len(groups['missing'])}):** {_names(groups['missing'])}", ""]
        absent = groups["deliberately absent"]
        lines += [f"**Deliberately absent ({len(absent)}):**", ""]
        if absent:
            lines += ["| name | reason |", "|---|---|"] + [f"| `{n}` | {r} |" for n, r in absent]
        else:
            lines.append("(none)")
    lines += [
        "",
        "## Backward node names that differ from PyTorch",
        "",
        "fgraph records PyTorch's node names for its primitives (`x[0]` → `SelectBackward0`, `a @ b` →",
        "`MmBackward0`/`DotBackward0`/`UnsafeViewBackward0`...). Where PyTorch has a fused kernel with its own",
        "node and fgraph composes the op from primitives, the outermost node differs. Found by running each",
        "call in both libraries (`NODE_PROBES`; first nodes along the first edges, outermost first):",
        "",
        "| call | fgraph | PyTorch |",
        "|---|---|---|",
    ]
    lines += [f"| `{call}` | {mine} | {theirs} |" for call, mine, theirs in node_differences()]
    return "\n".join(lines) + "\n"


def present_names(text: str) -> dict[str, list[str]]:
    """``{namespace: names}`` parsed from the *Present* lines of a rendered report."""
    out: dict[str, list[str]] = {}
    namespace = None
    for line in text.splitlines():
        if line.startswith("## `") and "→" in line:
            namespace = line.split("`")[1]
        elif line.startswith("**Present (") and namespace is not None:
            out[namespace] = [part for i, part in enumerate(line.split("`")) if i % 2 == 1]
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Write (or, with ``--check``, compare) ``docs/torch-coverage.md``."""
    parser = argparse.ArgumentParser(prog="python -m fgraph.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DOC, help=f"where to write the report (default {DOC})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the report on disk is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run python -m fgraph.coverage", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    counts = {ns: {k: len(v) for k, v in g.items()} for ns, g in report().items()}
    print(f"wrote {args.output}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
