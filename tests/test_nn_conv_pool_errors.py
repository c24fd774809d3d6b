"""Bad inputs to convolutions, pooling, normalization and attention raise clear errors."""
import pytest

import fgraph as fg
import fgraph.nn.functional as F


def test_conv_wrong_input_dims():
    with pytest.raises(fg.OpError, match=r"conv2d: expected a 3-D \(unbatched\) or 4-D"):
        F.conv2d(fg.ones((2, 3)), fg.ones((1, 1, 2, 2)))


def test_conv_wrong_weight_dims():
    with pytest.raises(fg.OpError, match="conv1d: weight must have 3 dims"):
        F.conv1d(fg.ones((1, 1, 4)), fg.ones((1, 2)))


def test_conv_channel_mismatch_with_groups():
    with pytest.raises(fg.OpError, match=r"conv1d: input of shape \(1, 4, 5\) has 4 channels.*\* 2"):
        F.conv1d(fg.ones((1, 4, 5)), fg.ones((2, 3, 2)), groups=2)


def test_conv_groups_not_dividing():
    with pytest.raises(fg.OpError, match="conv2d: groups=2 must be positive and divide"):
        F.conv2d(fg.ones((1, 3, 4, 4)), fg.ones((2, 1, 2, 2)), groups=2)


def test_conv_kernel_larger_than_input():
    with pytest.raises(fg.OpError, match="conv1d: the .dilated. kernel .* is larger than the padded input"):
        F.conv1d(fg.ones((1, 1, 2)), fg.ones((1, 1, 3)))


def test_conv_same_with_stride():
    with pytest.raises(fg.OpError, match="conv1d: padding='same' is not supported for strided"):
        F.conv1d(fg.ones((1, 1, 5)), fg.ones((1, 1, 3)), stride=2, padding="same")


def test_conv_bad_padding_string():
    with pytest.raises(fg.OpError, match="conv1d: padding must be 'valid', 'same'"):
        F.conv1d(fg.ones((1, 1, 5)), fg.ones((1, 1, 3)), padding="full")


def test_conv_bias_shape():
    with pytest.raises(fg.OpError, match=r"conv1d: bias must have shape \(2,\)"):
        F.conv1d(fg.ones((1, 1, 5)), fg.ones((2, 1, 3)), fg.ones(3))


def test_conv_integer_input():
    with pytest.raises(fg.OpError, match="conv1d: 'input' must be a floating-point tensor"):
        F.conv1d(fg.ones((1, 1, 5), dtype=fg.int32), fg.ones((1, 1, 3)))


def test_conv_transpose_channel_mismatch():
    with pytest.raises(fg.OpError, match="conv_transpose1d: input of shape .* has 3 channels"):
        F.conv_transpose1d(fg.ones((1, 3, 4)), fg.ones((2, 1, 2)))


def test_conv_transpose_output_padding_too_large():
    with pytest.raises(fg.OpError, match="conv_transpose1d: output_padding .* must be smaller"):
        F.conv_transpose1d(fg.ones((1, 1, 4)), fg.ones((1, 1, 2)), stride=2, output_padding=2)


def test_pool_kernel_larger_than_input():
    with pytest.raises(fg.OpError, match="max_pool1d: the .dilated. kernel size 4 is larger than the padded input"):
        F.max_pool1d(fg.ones((1, 1, 3)), 4)


def test_pool_padding_too_large():
    with pytest.raises(fg.OpError, match="avg_pool2d: padding .* should be at most half of the kernel size"):
        F.avg_pool2d(fg.ones((1, 1, 4, 4)), 2, padding=2)


def test_pool_wrong_input_dims():
    with pytest.raises(fg.OpError, match=r"max_pool2d: expected a 3-D \(unbatched\) or 4-D"):
        F.max_pool2d(fg.ones((4, 4)), 2)


def test_adaptive_pool_bad_output_size():
    with pytest.raises(fg.OpError, match="adaptive_avg_pool2d: output_size must be 2 positive ints"):
        F.adaptive_avg_pool2d(fg.ones((1, 1, 4, 4)), (0, 2))


def test_layer_norm_shape_mismatch():
    with pytest.raises(fg.OpError, match=r"layer_norm: normalized_shape \(4,\) must be non-empty and match"):
        F.layer_norm(fg.ones((2, 3)), (4,))


def test_group_norm_groups_not_dividing():
    with pytest.raises(fg.OpError, match="group_norm: the number of channels 3 .* divisible by num_groups=2"):
        F.group_norm(fg.ones((1, 3, 2)), 2)


def test_batch_norm_single_value_per_channel():
    with pytest.raises(fg.OpError, match="batch_norm: expected more than 1 value per channel"):
        F.batch_norm(fg.ones((1, 3)), None, None, training=True)


def test_batch_norm_eval_needs_running_stats():
    with pytest.raises(fg.OpError, match="batch_norm: training=False needs running_mean"):
        F.batch_norm(fg.ones((2, 3)), None, None)


def test_attention_embed_mismatch():
    with pytest.raises(fg.OpError, match="scaled_dot_product_attention: query and key must have the same embedding"):
        F.scaled_dot_product_attention(fg.ones((2, 3)), fg.ones((2, 4)), fg.ones((2, 4)))


def test_attention_mask_and_causal():
    with pytest.raises(fg.OpError, match="scaled_dot_product_attention: pass either attn_mask or is_causal"):
        F.scaled_dot_product_attention(fg.ones((2, 3)), fg.ones((2, 3)), fg.ones((2, 3)),
                                       attn_mask=fg.ones((2, 2)), is_causal=True)


def test_interpolate_bad_mode():
    with pytest.raises(fg.OpError, match="interpolate: mode 'lanczos' is not supported"):
        F.interpolate(fg.ones((1, 1, 2, 2)), size=3, mode="lanczos")


def test_interpolate_mode_dims():
    with pytest.raises(fg.OpError, match="interpolate: mode 'bilinear' expects a 4-D input"):
        F.interpolate(fg.ones((1, 1, 2)), size=3, mode="bilinear")


def test_interpolate_size_and_scale():
    with pytest.raises(fg.OpError, match="interpolate: pass exactly one of size and scale_factor"):
        F.interpolate(fg.ones((1, 1, 2)), size=3, scale_factor=2)
