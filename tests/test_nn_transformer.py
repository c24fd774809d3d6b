"""MultiheadAttention and the transformer layers against PyTorch and pure-JAX references (see nn_harness).

The references below are written from the equations (per-head einsums, explicit masks),
not from fgraph. Sizes: embed 4, heads 2, target length 3, source length 4, batch 2.
"""
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from nn_harness import LayerCase, case_modes, check_against_reference, check_against_torch
from torch_oracle_version import skip_if_older_than_oracle

E, H, L, S, N = 4, 2, 3, 4, 2
FF = 6


# -- pure-JAX references ---------------------------------------------------------------------------
def _sub(state, prefix):
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def _additive(mask):
    return jnp.where(mask, -jnp.inf, 0.0) if mask.dtype == bool else mask


def _softmax(scores, safe):
    """Softmax over keys; ``safe``: a row with every key masked gets zeros (torch's SDPA), not NaN."""
    if not safe:
        return jax.nn.softmax(scores, axis=-1)
    dead = jnp.all(jnp.isneginf(scores), axis=-1, keepdims=True)
    return jnp.where(dead, 0.0, jax.nn.softmax(jnp.where(dead, 0.0, scores), axis=-1))


def mha_ref(p, query, key, value, kpm=None, need_weights=True, attn_mask=None, average=True, is_causal=False, *,
            heads=H, batch_first=False, add_zero_attn=False):
    batched = query.ndim == 3
    if not batched:
        query, key, value = query[:, None], key[:, None], value[:, None]
        kpm = None if kpm is None else kpm[None]
    elif batch_first:
        query, key, value = (jnp.swapaxes(t, 0, 1) for t in (query, key, value))
    tgt, batch, embed = query.shape
    if "in_proj_weight" in p:
        wq, wk, wv = jnp.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = jnp.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0.0, 0.0, 0.0)
    q = jnp.einsum("lne,fe->lnf", query, wq) + bq
    k = jnp.einsum("sne,fe->snf", key, wk) + bk
    v = jnp.einsum("sne,fe->snf", value, wv) + bv
    extra = 0
    if "bias_k" in p:
        k = jnp.concatenate([k, jnp.broadcast_to(p["bias_k"], (1, batch, embed))])
        v = jnp.concatenate([v, jnp.broadcast_to(p["bias_v"], (1, batch, embed))])
        extra += 1
    d = embed // heads
    q, k, v = (t.reshape(t.shape[0], batch, heads, d) for t in (q, k, v))
    if add_zero_attn:
        k = jnp.concatenate([k, jnp.zeros((1, batch, heads, d))])
        v = jnp.concatenate([v, jnp.zeros((1, batch, heads, d))])
        extra += 1
    src = k.shape[0]
    scores = jnp.einsum("lnhd,snhd->nhls", q, k) / math.sqrt(d)

    def pad(m):
        return jnp.pad(m, [(0, 0)] * (m.ndim - 1) + [(0, extra)])

    if is_causal and kpm is None and not need_weights:   # the hint replaces the mask (torch)
        scores = scores + jnp.where(jnp.triu(jnp.ones((tgt, src), bool), 1), -jnp.inf, 0.0)
    elif attn_mask is not None:
        am = pad(_additive(attn_mask))
        scores = scores + (am if am.ndim == 2 else am.reshape(batch, heads, tgt, src))
    if kpm is not None:
        scores = scores + pad(_additive(kpm))[:, None, None, :]
    w = _softmax(scores, safe=not need_weights)
    out = jnp.einsum("nhls,snhd->lnhd", w, v).reshape(tgt, batch, embed) @ p["out_proj.weight"].T
    out = out + p.get("out_proj.bias", 0.0)
    weights = w.mean(1) if average else w
    if not batched:
        out, weights = out[:, 0], weights[0]
    elif batch_first:
        out = jnp.swapaxes(out, 0, 1)
    return (out, weights) if need_weights else out


def _ln(x, p, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * p["weight"] + p.get("bias", 0.0)


def _lin(x, p):
    return x @ p["weight"].T + p.get("bias", 0.0)


def _gelu(x):
    return jax.nn.gelu(x, approximate=False)


def _gelu_tanh(x):
    return jax.nn.gelu(x, approximate=True)


def enc_layer_ref(p, src, mask=None, kpm=None, is_causal=False, *, act=jax.nn.relu, norm_first=False,
                  batch_first=False):
    def sa(x):
        return mha_ref(_sub(p, "self_attn."), x, x, x, kpm, False, mask, True, is_causal, batch_first=batch_first)

    def ff(x):
        return _lin(act(_lin(x, _sub(p, "linear1."))), _sub(p, "linear2."))

    n1, n2 = _sub(p, "norm1."), _sub(p, "norm2.")
    if norm_first:
        x = src + sa(_ln(src, n1))
        return x + ff(_ln(x, n2))
    x = _ln(src + sa(src), n1)
    return _ln(x + ff(x), n2)


def dec_layer_ref(p, tgt, memory, tgt_mask=None, memory_mask=None, tgt_kpm=None, memory_kpm=None,
                  tgt_is_causal=False, *, act=jax.nn.relu, norm_first=False, batch_first=False):
    def sa(x):
        return mha_ref(_sub(p, "self_attn."), x, x, x, tgt_kpm, False, tgt_mask, True, tgt_is_causal,
                       batch_first=batch_first)

    def ca(x):
        return mha_ref(_sub(p, "multihead_attn."), x, memory, memory, memory_kpm, False, memory_mask,
                       batch_first=batch_first)

    def ff(x):
        return _lin(act(_lin(x, _sub(p, "linear1."))), _sub(p, "linear2."))

    n1, n2, n3 = _sub(p, "norm1."), _sub(p, "norm2."), _sub(p, "norm3.")
    if norm_first:
        x = tgt + sa(_ln(tgt, n1))
        x = x + ca(_ln(x, n2))
        return x + ff(_ln(x, n3))
    x = _ln(tgt + sa(tgt), n1)
    x = _ln(x + ca(x), n2)
    return _ln(x + ff(x), n3)


def encoder_ref(p, src, mask=None, kpm=None, *, layers, final_norm, **kw):
    for i in range(layers):
        src = enc_layer_ref(_sub(p, f"layers.{i}."), src, mask, kpm, **kw)
    return _ln(src, _sub(p, "norm.")) if final_norm else src


def decoder_ref(p, tgt, memory, tgt_mask=None, memory_mask=None, tgt_kpm=None, memory_kpm=None, *, layers,
                final_norm, **kw):
    for i in range(layers):
        tgt = dec_layer_ref(_sub(p, f"layers.{i}."), tgt, memory, tgt_mask, memory_mask, tgt_kpm, memory_kpm, **kw)
    return _ln(tgt, _sub(p, "norm.")) if final_norm else tgt


def ref(fn, **static):
    """A harness reference: ``fn(state, *inputs, **static)``."""
    def reference(state, *args, training):
        return fn(state, *args, **static)

    return reference


def transformer_ref(p, src, tgt, src_mask=None, tgt_mask=None):
    memory = encoder_ref(_sub(p, "encoder."), src, src_mask, layers=1, final_norm=True)
    return decoder_ref(_sub(p, "decoder."), tgt, memory, tgt_mask, layers=1, final_norm=True)


# -- inputs ----------------------------------------------------------------------------------------
def _causal(n, m=None, dtype=bool):
    upper = np.triu(np.ones((n, n if m is None else m), bool), 1)
    return upper if dtype is bool else np.where(upper, -np.inf, 0.0)


KPM = np.array([[False, False, True, False], [False, False, False, True]])     # (N, S): True = padding
KPM_DEAD = np.array([[False, True, False, True], [True, True, True, True]])    # batch 1: every key masked
BOOL_MASK = np.array([[False, True, False, False], [False, False, True, False], [True, False, False, False]])


def _qkv(rng, kdim=E, vdim=E, batch=(N,)):
    return (rng.standard_normal((L, *batch, E)), rng.standard_normal((S, *batch, kdim)),
            rng.standard_normal((S, *batch, vdim)))


# -- modules whose output is attn_output alone (need_weights=False returns (out, None)) -----------------
class OutputOnlyMHA(nn.MultiheadAttention):
    def forward(self, *args, **kwargs):
        out, weights = super().forward(*args, **kwargs)
        assert weights is None
        return out


def _torch_output_only(t, *args, **kwargs):
    class OutputOnly(t.nn.MultiheadAttention):
        def forward(self, *a, **kw):
            return super().forward(*a, **kw)[0]

    return OutputOnly(*args, **kwargs)


def _mha_case(name, inputs, kwargs=None, *, ref_kw=None, out_only=False):
    kwargs = kwargs or {}
    make = (lambda: OutputOnlyMHA(E, H, **kwargs)) if out_only else (lambda: nn.MultiheadAttention(E, H, **kwargs))
    torch_make = ((lambda t: _torch_output_only(t, E, H, **kwargs)) if out_only
                  else (lambda t: t.nn.MultiheadAttention(E, H, **kwargs)))
    ref_kw = dict(batch_first=kwargs.get("batch_first", False), add_zero_attn=kwargs.get("add_zero_attn", False),
                  **(ref_kw or {}))
    return LayerCase(name, make, inputs, torch_make, ref(mha_ref, **ref_kw))


MHA_CASES = [
    _mha_case("MHA", lambda rng: _qkv(rng)),
    _mha_case("MHA-boolmask-kpm-perhead",
              lambda rng: (*_qkv(rng), KPM, True, BOOL_MASK, False)),
    _mha_case("MHA-floatmask3d-batchfirst-causalhint-ignored",   # need_weights: the mask is used, not the hint
              lambda rng: (*(np.swapaxes(t, 0, 1) for t in _qkv(rng)), None, True,
                           rng.standard_normal((N * H, L, S)), True, True), dict(batch_first=True)),
    _mha_case("MHA-kdim-vdim-nobias-floatkpm",
              lambda rng: (*_qkv(rng, kdim=3, vdim=5), np.where(KPM, -np.inf, 0.5)),
              dict(kdim=3, vdim=5, bias=False)),
    _mha_case("MHA-biaskv-zeroattn-masks",
              lambda rng: (*_qkv(rng), KPM, True, BOOL_MASK), dict(add_bias_kv=True, add_zero_attn=True)),
    _mha_case("MHA-unbatched-mask3d",
              lambda rng: (*_qkv(rng, batch=()), KPM[0], True, np.stack([BOOL_MASK, BOOL_MASK[::-1]]), False)),
    _mha_case("MHA-noweights-causal", lambda rng: (*_qkv(rng), None, False, _causal(L, S), True, True),
              out_only=True),
    _mha_case("MHA-noweights-allmasked-row",
              lambda rng: (*_qkv(rng), np.where(KPM_DEAD, -np.inf, 0.0), False, rng.standard_normal((L, S))),
              out_only=True),
]


def _enc_layer_case(name, inputs, kwargs, ref_kw):
    kwargs = dict(dim_feedforward=FF, dropout=0.0, **kwargs)
    fg_kwargs = {k: (v(nn) if callable(v) and not isinstance(v, str) else v) for k, v in kwargs.items()}
    return LayerCase(name, lambda: nn.TransformerEncoderLayer(E, H, **fg_kwargs), inputs,
                     lambda t: t.nn.TransformerEncoderLayer(E, H, **{k: (v(t.nn) if callable(v) else v)
                                                                      for k, v in kwargs.items()}),
                     ref(enc_layer_ref, **ref_kw))


def _gelu_tanh_module(namespace):
    return namespace.GELU("tanh")


TRANSFORMER_CASES = [   # sequences of length L (decoder layers' memory: S), batch N: the cases share kernels
    _enc_layer_case("EncoderLayer-causal", lambda rng: (rng.standard_normal((L, N, E)), _causal(L, dtype=float), None,
                                                        True), {}, {}),
    _enc_layer_case("EncoderLayer-prenorm-gelu-batchfirst-masks",
                    lambda rng: (rng.standard_normal((N, L, E)), BOOL_MASK[:, :L], KPM[:, :L]),
                    dict(activation="gelu", norm_first=True, batch_first=True),
                    dict(act=_gelu, norm_first=True, batch_first=True)),
    _enc_layer_case("EncoderLayer-module-activation-nobias",
                    lambda rng: (rng.standard_normal((L, N, E)), BOOL_MASK[:, :L]),
                    dict(activation=_gelu_tanh_module, bias=False),
                    dict(act=_gelu_tanh)),
    LayerCase("DecoderLayer-prenorm-batchfirst-gelu-floatmasks",
              lambda: nn.TransformerDecoderLayer(E, H, FF, 0.0, "gelu", norm_first=True, batch_first=True),
              lambda rng: (rng.standard_normal((N, L, E)), rng.standard_normal((N, S, E)),
                           _causal(L, dtype=float), rng.standard_normal((L, S))),
              lambda t: t.nn.TransformerDecoderLayer(E, H, FF, 0.0, "gelu", norm_first=True, batch_first=True),
              ref(dec_layer_ref, act=_gelu, norm_first=True, batch_first=True)),
    LayerCase("Decoder-2layers-norm-masks",
              lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF, 0.0), 2, norm=nn.LayerNorm(E)),
              lambda rng: (rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E)), _causal(L), None, None,
                           KPM),
              lambda t: t.nn.TransformerDecoder(t.nn.TransformerDecoderLayer(E, H, FF, 0.0), 2,
                                                norm=t.nn.LayerNorm(E)),
              ref(decoder_ref, layers=2, final_norm=True)),
    LayerCase("Encoder-2layers-kpm",
              lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, 0.0), 2),
              lambda rng: (rng.standard_normal((L, N, E)), None, KPM[:, :L]),
              lambda t: t.nn.TransformerEncoder(t.nn.TransformerEncoderLayer(E, H, FF, 0.0), 2,
                                                enable_nested_tensor=False),
              ref(encoder_ref, layers=2, final_norm=False)),
    LayerCase("Transformer-1+1",
              lambda: nn.Transformer(E, H, 1, 1, FF, 0.0),
              lambda rng: (rng.standard_normal((L, N, E)), rng.standard_normal((L, N, E)), None, _causal(L)),
              lambda t: _quiet(t.nn.Transformer, E, H, 1, 1, FF, 0.0),
              ref(transformer_ref)),
]


def _quiet(make, *args, **kwargs):
    """Build a torch module without its nested-tensor fast-path warning (TransformerEncoder's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(*args, **kwargs)


# -- value and gradient checks --------------------------------------------------------------------------
@pytest.mark.parametrize("case,mode", case_modes(MHA_CASES))
def test_mha_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.parametrize("case,mode", case_modes(MHA_CASES, torch_only=True))
def test_mha_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


@pytest.mark.parametrize("case,mode", case_modes(TRANSFORMER_CASES))
def test_transformer_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.parametrize("case,mode", case_modes(TRANSFORMER_CASES, torch_only=True))
def test_transformer_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


# -- reprs, init ------------------------------------------------------------------------------------------
def test_mha_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for kwargs in ({}, dict(kdim=3, vdim=5, bias=False), dict(add_bias_kv=True, add_zero_attn=True)):
        assert repr(nn.MultiheadAttention(E, H, **kwargs)) == repr(torch.nn.MultiheadAttention(E, H, **kwargs))


def test_transformer_reprs_match_torch():
    torch = pytest.importorskip("torch")
    skip_if_older_than_oracle(torch, "LayerNorm's bias in its repr")
    pairs = [
        (nn.TransformerEncoderLayer(E, H, FF, activation=nn.GELU()),
         torch.nn.TransformerEncoderLayer(E, H, FF, activation=torch.nn.GELU())),
        (nn.TransformerDecoderLayer(E, H, FF, bias=False), torch.nn.TransformerDecoderLayer(E, H, FF, bias=False)),
        (nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 2),
         _quiet(torch.nn.TransformerEncoder, torch.nn.TransformerEncoderLayer(E, H, FF), 2)),
        (nn.Transformer(E, H, 1, 2, FF), _quiet(torch.nn.Transformer, E, H, 1, 2, FF)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


def _uniform_like(w, bound):
    w = np.asarray(w).ravel()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound   # U(-a, a) has std a / sqrt(3)


def test_mha_default_init_follows_torch():
    fg.manual_seed(0)
    e = 64
    mha = nn.MultiheadAttention(e, 4, add_bias_kv=True)
    _uniform_like(mha.in_proj_weight.numpy(), math.sqrt(6 / (e + 3 * e)))      # xavier_uniform_, fans (E, 3E)
    _uniform_like(mha.out_proj.weight.numpy(), 1 / math.sqrt(e))               # Linear's kaiming_uniform_(a=sqrt 5)
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    for b in (mha.bias_k, mha.bias_v):                                           # xavier_normal_, fans (E, E)
        assert b.shape == (1, 1, e) and abs(b.numpy().std() - math.sqrt(2 / (2 * e))) < 0.3 * math.sqrt(1 / e)
    sep = nn.MultiheadAttention(e, 4, kdim=16, vdim=32, bias=False)
    assert sep.in_proj_weight is None and sep.in_proj_bias is None and sep.out_proj.bias is None
    _uniform_like(sep.q_proj_weight.numpy(), math.sqrt(6 / (2 * e)))
    _uniform_like(sep.k_proj_weight.numpy(), math.sqrt(6 / (e + 16)))
    _uniform_like(sep.v_proj_weight.numpy(), math.sqrt(6 / (e + 32)))
    assert [n for n, _ in sep.named_parameters()] == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                      "out_proj.weight"]


def test_transformer_init_and_clones():
    fg.manual_seed(0)
    model = nn.Transformer(16, 2, 1, 1, 48, dropout=0.0)
    _uniform_like(model.encoder.layers[0].linear1.weight.numpy(), math.sqrt(6 / (16 + 48)))  # xavier, not Linear's
    layer = nn.TransformerEncoderLayer(E, H, FF)
    encoder = nn.TransformerEncoder(layer, 2)
    a, b = encoder.layers[0], encoder.layers[1]
    assert a is not layer and a.linear1.weight is not b.linear1.weight
    np.testing.assert_array_equal(a.linear1.weight.numpy(), layer.linear1.weight.numpy())  # deep copies
    nn.init.zeros_(a.linear1.weight)
    assert not a.linear1.weight.numpy().any() and b.linear1.weight.numpy().any()
    assert not layer.linear1.weight is a.linear1.weight and layer.linear1.weight.numpy().any()
    assert list(encoder.state_dict())[:2] == ["layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias"]


def test_generate_square_subsequent_mask_matches_torch():
    torch = pytest.importorskip("torch")
    ours = nn.Transformer.generate_square_subsequent_mask(4, dtype=fg.float64)
    assert ours.dtype == np.float64
    np.testing.assert_array_equal(ours.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())


# -- outputs, dropout -------------------------------------------------------------------------------------
def _x(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


def test_need_weights_false_returns_none():
    mha = nn.MultiheadAttention(E, H).double()
    x = _x(L, N, E)
    out, weights = mha(x, x, x, need_weights=False)
    assert weights is None and out.shape == (L, N, E)
    out_w, weights = mha(x, x, x, average_attn_weights=False)
    assert weights.shape == (N, H, L, L)
    np.testing.assert_allclose(out.numpy(), out_w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-12)


def test_mha_dropout_acts_on_the_weights_in_training_only():
    fg.manual_seed(0)
    p = 0.5
    mha = nn.MultiheadAttention(E, H, dropout=p).double()
    q, k, v = _x(L, N, E), _x(S, N, E, seed=1), _x(S, N, E, seed=2)
    out_eval, w_eval = mha.eval()(q, k, v, average_attn_weights=False)
    mha.train()
    fg.manual_seed(3)
    out, w = mha(q, k, v, average_attn_weights=False)
    fg.manual_seed(3)
    again, w_again = mha(q, k, v, average_attn_weights=False)
    np.testing.assert_array_equal(out.numpy(), again.numpy())                  # same seed, same mask
    np.testing.assert_array_equal(w.numpy(), w_again.numpy())
    fg.manual_seed(4)
    assert not np.allclose(mha(q, k, v)[0].numpy(), out.numpy())                # another seed, another mask
    ratio = w.numpy() / w_eval.numpy()                                          # dropped weights: 0 or w / (1 - p)
    assert np.all(np.isclose(ratio, 0.0) | np.isclose(ratio, 1 / (1 - p)))
    assert np.isclose(ratio, 0.0).any() and np.isclose(ratio, 2.0).any()
    # the output is computed from exactly those dropped weights
    vh = (v.numpy() @ np.split(mha.in_proj_weight.numpy(), 3)[2].T).reshape(S, N, H, E // H)
    heads = np.einsum("nhls,snhd->lnhd", w.numpy(), vh).reshape(L, N, E)
    np.testing.assert_allclose(out.numpy(), heads @ mha.out_proj.weight.numpy().T, rtol=1e-10, atol=1e-12)
    # the scaled_dot_product_attention path (need_weights=False) drops too, reproducibly
    fg.manual_seed(5)
    a = mha(q, k, v, need_weights=False)[0]
    fg.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), mha(q, k, v, need_weights=False)[0].numpy())
    assert not np.allclose(a.numpy(), out_eval.numpy())
    np.testing.assert_allclose(mha.eval()(q, k, v, need_weights=False)[0].numpy(), out_eval.numpy(), rtol=1e-12)


def test_transformer_dropout_reproducible_and_off_in_eval():
    fg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, FF, dropout=0.3).double()
    plain = nn.TransformerEncoderLayer(E, H, FF, dropout=0.0).double()
    plain.load_state_dict(layer.state_dict())
    x = _x(L, N, E)
    fg.manual_seed(1)
    a = layer(x)
    fg.manual_seed(1)
    np.testing.assert_array_equal(a.numpy(), layer(x).numpy())
    fg.manual_seed(2)
    assert not np.allclose(a.numpy(), layer(x).numpy())
    assert not np.allclose(a.numpy(), plain(x).numpy())
    np.testing.assert_allclose(layer.eval()(x).numpy(), plain(x).numpy(), rtol=1e-12)


# -- functional, masks, tracing ---------------------------------------------------------------------------
def test_functional_static_kv_matches_torch():
    torch = pytest.importorskip("torch")
    import fgraph.nn.functional as F

    rng = np.random.default_rng(0)
    q = rng.standard_normal((L, N, E))
    w_in, b_in = rng.standard_normal((3 * E, E)), rng.standard_normal(3 * E)
    w_out, b_out = rng.standard_normal((E, E)), rng.standard_normal(E)
    static_k, static_v = rng.standard_normal((N * H, L, E // H)), rng.standard_normal((N * H, L, E // H))
    mask = BOOL_MASK[:, :L]
    args = (E, H, w_in, b_in, None, None, False, 0.0, w_out, b_out)
    kwargs = dict(attn_mask=mask, static_k=static_k, static_v=static_v, average_attn_weights=False)
    ours = F.multi_head_attention_forward(*[fg.tensor(a) if isinstance(a, np.ndarray) else a for a in (q, q, q)],
                                          *[fg.tensor(a) if isinstance(a, np.ndarray) else a for a in args],
                                          **{k: fg.tensor(v) if isinstance(v, np.ndarray) else v
                                             for k, v in kwargs.items()})
    theirs = torch.nn.functional.multi_head_attention_forward(
        *[torch.tensor(a) for a in (q, q, q)], *[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args],
        **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_fully_masked_query_gives_zeros_without_weights_and_finite_gradients():
    import fgraph.nn.functional as F

    q = fg.tensor(np.random.default_rng(0).standard_normal((1, 2, 2)), requires_grad=True)
    mask = fg.tensor([[False, False], [True, False]])                          # query 0 sees no key
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert out.numpy()[0, 0].tolist() == [0.0, 0.0] and np.isfinite(out.numpy()).all()
    (g,) = fg.grad(out.sum(), [q])
    assert np.isfinite(g.numpy()).all()


def test_mismatched_mask_dtypes_warn_as_torch():
    mha = nn.MultiheadAttention(E, H).double()
    x = _x(L, N, E)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        mha(x, x, x, key_padding_mask=fg.tensor(KPM[:, :L]), attn_mask=fg.tensor(np.zeros((L, L))))


def test_mha_runs_under_jit():
    mha = nn.MultiheadAttention(E, H, batch_first=True).double()
    x, kpm = _x(N, L, E), KPM[:, :L]

    def program(x, kpm):
        t = fg.tensor(x)
        out, weights = mha(t, t, t, key_padding_mask=fg.tensor(kpm))
        return out.array, weights.array

    out, weights = jax.jit(program)(x.array, jnp.asarray(kpm))
    eager_out, eager_weights = mha(x, x, x, key_padding_mask=fg.tensor(kpm))
    np.testing.assert_allclose(out, eager_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(weights, eager_weights.numpy(), rtol=1e-12)


# -- errors ------------------------------------------------------------------------------------------------
def test_mha_errors_name_the_layer_and_the_shapes():
    with pytest.raises(ValueError, match="MultiheadAttention: embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(ValueError, match="MultiheadAttention: dropout probability"):
        nn.MultiheadAttention(E, H, dropout=1.5)
    mha = nn.MultiheadAttention(E, H).double()
    x = _x(L, N, E)
    cases = [
        ((x, _x(S, N, 3), _x(S, N, 3)), {}, r"key has embedding size 3 but query has 4.*kdim"),
        ((_x(L, N, 6),) * 3, {}, r"expecting embedding dimension of 4, but got 6"),
        ((x, x, x), dict(attn_mask=fg.tensor(np.zeros((L, S)))), r"2D attn_mask is \(3, 4\).*should be \(3, 3\)"),
        ((x, x, x), dict(attn_mask=fg.tensor(np.zeros((N, L, L)))), r"3D attn_mask is \(2, 3, 3\).*\(4, 3, 3\)"),
        ((x, x, x), dict(attn_mask=fg.tensor(np.zeros((L, L), np.int32))), "only bool and floating types"),
        ((x, x, x), dict(key_padding_mask=fg.tensor(KPM)), r"key_padding_mask of shape \(2, 3\).*\(2, 4\)"),
        ((x, x, x), dict(key_padding_mask=fg.tensor(KPM[0])), "expected `key_padding_mask` to be None or 2-D"),
        ((x, x, x), dict(is_causal=True), "need attn_mask if specifying the is_causal hint"),
        ((_x(1, L, N, E),) * 3, {}, "query should be unbatched 2D"),
        ((x, _x(S, E), _x(S, E)), {}, "expected `key` and `value` to be 3-D"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(fg.OpError, match=f"MultiheadAttention: .*{message}"):
            mha(*args, **kwargs)


def test_transformer_errors():
    with pytest.raises(ValueError, match="TransformerEncoderLayer: activation should be relu/gelu, not 'tanh'"):
        nn.TransformerEncoderLayer(E, H, FF, activation="tanh")
    with pytest.raises(ValueError, match="TransformerEncoder: num_layers must be a non-negative integer"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), -1)
    model = nn.Transformer(E, H, 1, 1, FF, dropout=0.0)
    with pytest.raises(ValueError, match=r"batch number of src and tgt must be equal.*\(3, 2, 4\).*\(3, 1, 4\)"):
        model(_x(L, N, E), _x(L, 1, E))
    with pytest.raises(ValueError, match="feature number of src and tgt must be equal to d_model"):
        model(_x(L, N, E), _x(L, N, 6))


def test_causal_attention_compiled_first_then_eager():
    """The causal mask made while fg.compile traces belongs to that trace: eager calls after it get their own."""
    q = fg.tensor(np.random.default_rng(0).standard_normal((1, 2, 5, 8)).astype(np.float32))
    compiled = fg.compile(lambda t: fg.nn.functional.scaled_dot_product_attention(t, t, t, is_causal=True))
    first = compiled(q)
    eager = fg.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    np.testing.assert_allclose(first.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(compiled(q).numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
