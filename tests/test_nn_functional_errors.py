"""Bad input to fgraph.nn.functional: one test per kind of mistake, each asserting on the message."""
import warnings

import jax
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import OpError


def logits(*shape):
    return fg.tensor(np.zeros(shape), dtype=fg.float32)


# -- class-index losses -----------------------------------------------------------------------------------------
def test_cross_entropy_target_shape():
    with pytest.raises(OpError, match=r"cross_entropy: .*input of shape \(3, 4\).*target must have shape \(3,\), got \(4,\)"):
        F.cross_entropy(logits(3, 4), fg.tensor([0, 1, 2, 3]))


def test_cross_entropy_float_target_of_other_shape():
    with pytest.raises(OpError, match=r"cross_entropy: a floating-point target holds class probabilities .*\(3, 4\).*\.long\(\)"):
        F.cross_entropy(logits(3, 4), fg.tensor([0.0, 1.0, 2.0]))


def test_cross_entropy_target_dtype():
    with pytest.raises(OpError, match=r"cross_entropy: 'target' must be an integer tensor .* got dtype bool"):
        F.cross_entropy(logits(3, 4), fg.tensor([True, False, True]))


def test_cross_entropy_class_index_out_of_range():
    with pytest.raises(IndexError, match=r"cross_entropy: target 4 is out of bounds for 4 classes"):
        F.cross_entropy(logits(3, 4), fg.tensor([0, 4, 1]))


def test_a_target_checked_once_is_checked_again_against_other_inputs():
    # the host range of a target array is remembered (arrays are immutable); the bound is not
    target = fg.tensor([0, 4, 1])
    F.cross_entropy(logits(3, 5), target)
    with pytest.raises(IndexError, match=r"cross_entropy: target 4 is out of bounds for 4 classes"):
        F.cross_entropy(logits(3, 4), target)
    F.cross_entropy(logits(3, 4), target, ignore_index=4)  # a different ignore_index: scanned again
    with pytest.raises(IndexError, match=r"target -1 is out of bounds"):
        F.cross_entropy(logits(3, 4), fg.tensor([0, -1, 1]), ignore_index=4)


def test_nll_loss_negative_class_index():
    with pytest.raises(IndexError, match=r"nll_loss: target -1 is out of bounds .*ignore_index=-100"):
        F.nll_loss(logits(3, 4), fg.tensor([0, -1, 1]))


def test_ignore_index_is_not_out_of_range():
    assert F.nll_loss(logits(2, 4), fg.tensor([0, -100]), reduction="sum").item() == 0.0


def test_class_weight_shape():
    with pytest.raises(OpError, match=r"nll_loss: weight should hold one value per class, shape \(4,\).*got shape \(3,\)"):
        F.nll_loss(logits(3, 4), fg.tensor([0, 1, 2]), weight=fg.ones(3))


def test_class_loss_on_0d_input():
    with pytest.raises(OpError, match=r"cross_entropy: input must have a class dimension"):
        F.cross_entropy(logits(), fg.tensor(0))


def test_label_smoothing_range():
    with pytest.raises(OpError, match=r"cross_entropy: label_smoothing must be between 0.0 and 1.0, got 1.5"):
        F.cross_entropy(logits(3, 4), fg.tensor([0, 1, 2]), label_smoothing=1.5)


def test_invalid_reduction():
    with pytest.raises(OpError, match=r"mse_loss: 'avg' is not a valid value for reduction"):
        F.mse_loss(fg.ones(2), fg.ones(2), reduction="avg")
    with pytest.raises(OpError, match=r"kl_div: 'batch' is not a valid value .*'batchmean'"):
        F.kl_div(fg.ones(2), fg.ones(2), reduction="batch")


# -- regression and binary losses -------------------------------------------------------------------------------
def test_loss_shapes_do_not_broadcast():
    with pytest.raises(OpError, match=r"l1_loss: shapes \[\(2, 3\), \(4,\)\] do not broadcast"):
        with pytest.warns(UserWarning):
            F.l1_loss(fg.ones(2, 3), fg.ones(4))


def test_target_size_warning():
    with pytest.warns(UserWarning, match=r"mse_loss: using a target size \(3,\) that is different to the input size \(2, 3\)"):
        F.mse_loss(fg.ones(2, 3), fg.ones(3))


def test_elementwise_weight_shape():
    with pytest.raises(OpError, match=r"mse_loss: weight of shape \(3,\) must have the input's shape \(2, 3\)"):
        F.mse_loss(fg.ones(2, 3), fg.ones(2, 3), weight=fg.ones(3))


def test_binary_cross_entropy_target_shape():
    with pytest.raises(OpError, match=r"binary_cross_entropy: target of shape \(3, 1\) must have the input's shape \(3,\)"):
        F.binary_cross_entropy(fg.full((3,), 0.5), fg.ones(3, 1))


def test_binary_cross_entropy_with_logits_pos_weight_shape():
    with pytest.raises(OpError, match=r"pos_weight of shape \(2,\) must broadcast to the target's shape \(4, 3\)"):
        F.binary_cross_entropy_with_logits(fg.ones(4, 3), fg.ones(4, 3), pos_weight=fg.ones(2))


def test_smooth_l1_negative_beta_and_huber_delta():
    with pytest.raises(OpError, match=r"smooth_l1_loss: beta must be non-negative, got -1.0"):
        F.smooth_l1_loss(fg.ones(2), fg.ones(2), beta=-1.0)
    with pytest.raises(OpError, match=r"huber_loss: delta must be positive, got 0"):
        F.huber_loss(fg.ones(2), fg.ones(2), delta=0)


def test_triplet_margin_loss_dims_and_margin():
    with pytest.raises(OpError, match=r"triplet_margin_loss: .*anchor 2-d, positive 2-d and negative 1-d"):
        F.triplet_margin_loss(fg.ones(2, 3), fg.ones(2, 3), fg.ones(3))
    with pytest.raises(OpError, match=r"triplet_margin_loss: margin must be greater than 0, got -1.0"):
        F.triplet_margin_loss(fg.ones(2, 3), fg.ones(2, 3), fg.ones(2, 3), margin=-1.0)


# -- one_hot ------------------------------------------------------------------------------------------------------
def test_one_hot_on_floats():
    with pytest.raises(OpError, match=r"one_hot: 'tensor' must be an integer tensor .* got dtype float32.*\.long\(\)"):
        F.one_hot(fg.tensor([0.0, 1.0]))


def test_one_hot_class_out_of_range():
    with pytest.raises(OpError, match=r"one_hot: class values must be smaller than num_classes \(3\), got 3"):
        F.one_hot(fg.tensor([0, 3]), 3)
    with pytest.raises(OpError, match=r"one_hot: class values must be non-negative, got -1"):
        F.one_hot(fg.tensor([0, -1]), 3)


def test_one_hot_cannot_infer_classes():
    with pytest.raises(OpError, match=r"one_hot: cannot infer the number of classes from an empty tensor"):
        F.one_hot(fg.tensor(np.zeros(0, np.int32)))

    def traced(a):
        return F.one_hot(fg.Tensor(a)).array

    with pytest.raises(OpError, match=r"one_hot: num_classes=-1 .* under tracing .* pass num_classes explicitly"):
        jax.jit(traced)(np.array([0, 1]))


# -- dropout and activations ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_probability_range(p):
    with pytest.raises(OpError, match=rf"dropout: dropout probability has to be between 0 and 1, but got {p}"):
        F.dropout(fg.ones(3), p)


def test_inplace_is_refused():
    with pytest.raises(OpError, match=r"relu: inplace=True is not supported.*x = F.relu\(x\)"):
        F.relu(fg.ones(3), inplace=True)


def test_activation_on_integer_tensor():
    with pytest.raises(OpError, match=r"gelu: 'input' must be a floating-point tensor, got dtype int32 .*\.float\(\)"):
        F.gelu(fg.tensor([1, 2], dtype=fg.int32))


def test_activation_on_non_tensor():
    with pytest.raises(TypeError, match=r"silu: argument 'input' must be a Tensor, not list"):
        F.silu([1.0, 2.0])


def test_gelu_approximate():
    with pytest.raises(OpError, match=r"gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        F.gelu(fg.ones(2), approximate="fast")


def test_hardtanh_bounds():
    with pytest.raises(OpError, match=r"hardtanh: min_val \(2.0\) cannot be greater than max_val \(1.0\)"):
        F.hardtanh(fg.ones(2), 2.0, 1.0)


def test_softmax_dim_out_of_range():
    with pytest.raises(IndexError, match=r"softmax: dim 2 is out of range for a tensor with 2 dimensions"):
        F.softmax(fg.ones(2, 3), dim=2)


def test_softmax_implicit_dim_warns():
    with pytest.warns(UserWarning, match=r"Implicit dimension choice for log_softmax"):
        out = F.log_softmax(fg.ones(2, 3))
    assert out.shape == (2, 3)


def test_glu_odd_dimension():
    with pytest.raises(OpError, match=r"glu: halving dimension must be even, but dimension 1 of input shape \(2, 3\) is size 3"):
        F.glu(fg.ones(2, 3))


# -- embedding and linear maps --------------------------------------------------------------------------------------
def test_embedding_index_out_of_range():
    with pytest.raises(IndexError, match=r"embedding: index 5 is out of range for a weight with 5 rows"):
        F.embedding(fg.tensor([0, 5]), fg.ones(5, 2))


def test_embedding_float_indices():
    with pytest.raises(OpError, match=r"embedding: 'input' must be an integer tensor .* got dtype float32"):
        F.embedding(fg.tensor([0.0, 1.0]), fg.ones(5, 2))


def test_embedding_bad_weight_and_padding_idx():
    with pytest.raises(OpError, match=r"embedding: weight must be 2-D .* got shape \(5,\)"):
        F.embedding(fg.tensor([0]), fg.ones(5))
    with pytest.raises(OpError, match=r"embedding: padding_idx 7 must be within num_embeddings \(5\)"):
        F.embedding(fg.tensor([0]), fg.ones(5, 2), padding_idx=7)


def test_embedding_max_norm_not_implemented():
    with pytest.raises(NotImplementedError, match=r"embedding: max_norm renormalises the weight in place"):
        F.embedding(fg.tensor([0]), fg.ones(5, 2), max_norm=1.0)


def test_linear_shape_mismatch():
    with pytest.raises(OpError, match=r"linear: input of shape \(2, 3\) and weight of shape \(4, 5\) do not fit"):
        F.linear(fg.ones(2, 3), fg.ones(4, 5))
    with pytest.raises(OpError, match=r"linear: bias of shape \(3,\) does not broadcast to the output shape \(2, 4\)"):
        F.linear(fg.ones(2, 3), fg.ones(4, 3), fg.ones(3))


def test_bilinear_shape_mismatch():
    with pytest.raises(OpError, match=r"bilinear: weight must have shape \(out_features, 3, 4\)"):
        F.bilinear(fg.ones(2, 3), fg.ones(2, 4), fg.ones(5, 4, 3))
    with pytest.raises(OpError, match=r"bilinear: input1 \(2, 3\) and input2 \(3, 4\) must be .* equal batch"):
        F.bilinear(fg.ones(2, 3), fg.ones(3, 4), fg.ones(5, 3, 4))


def test_normalize_out_argument():
    with pytest.raises(OpError, match=r"normalize: out= is not supported"):
        F.normalize(fg.ones(2, 3), out=fg.ones(2, 3))


def test_cosine_similarity_shapes():
    with pytest.raises(OpError, match=r"cosine_similarity: shapes \[\(2, 3\), \(2, 4\)\] do not broadcast"):
        F.cosine_similarity(fg.ones(2, 3), fg.ones(2, 4))


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(fg.zeros(2, 3), fg.ones(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(fg.zeros(2, 3), fg.ones(2, 3), reduction="batchmean")
