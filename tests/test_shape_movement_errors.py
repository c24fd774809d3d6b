"""Bad inputs to the shape and movement ops raise clear errors naming the op, the shapes and the fix."""
import jax
import jax.numpy as jnp
import pytest

import fgraph as fg
import fgraph.nn.functional as F

X = fg.ones(2, 3)


def test_dim_out_of_range_is_an_index_error():
    with pytest.raises(IndexError, match=r"movedim: dim 2 is out of range .* 2 dimensions"):
        X.movedim(2, 0)
    with pytest.raises(IndexError, match=r"split: dim 0 is out of range: the tensor is 0-dimensional"):
        fg.tensor(1.0).split(1)


def test_unflatten_sizes_must_multiply_to_the_dim():
    with pytest.raises(fg.OpError, match=r"unflatten: provided sizes \[2, -1\] don't multiply up to the size of dim 1 \(3\)"):
        X.unflatten(1, (2, -1))
    with pytest.raises(fg.OpError, match=r"unflatten: sizes must be non-empty"):
        X.unflatten(1, ())


def test_movedim_source_and_destination_must_match():
    with pytest.raises(fg.OpError, match=r"movedim: source \[0\] and destination \[1, 0\] must name the same number"):
        X.movedim((0,), (1, 0))
    with pytest.raises(fg.OpError, match=r"movedim: repeated dim in destination \[1, 1\]"):
        X.movedim((0, 1), (1, 1))


def test_broadcast_tensors_incompatible_shapes():
    with pytest.raises(fg.OpError, match=r"broadcast: shapes \[\(2, 3\), \(4, 2\)\] cannot be broadcast together"):
        fg.broadcast_tensors(X, fg.ones(4, 2))
    with pytest.raises(fg.OpError, match=r"expand: the size of dimension 1 \(3\) must match the target \(2\)"):
        X.expand_as(fg.ones(2, 2))


def test_stacking_needs_tensors():
    with pytest.raises(fg.OpError, match=r"hstack: expected a non-empty sequence of tensors"):
        fg.hstack([])
    with pytest.raises(fg.OpError, match=r"vstack: element 1 is a list, expected a Tensor"):
        fg.vstack([X, [1.0]])


def test_repeat_needs_enough_non_negative_sizes():
    with pytest.raises(fg.OpError, match=r"repeat: got 1 repeat sizes \[2\] for a tensor of shape \(2, 3\).*can not be smaller"):
        X.repeat(2)
    with pytest.raises(fg.OpError, match=r"repeat: repeat sizes \[-1, 1\] must be non-negative"):
        X.repeat(-1, 1)


def test_repeat_interleave_bad_repeats():
    with pytest.raises(fg.OpError, match=r"repeat_interleave: repeats must be non-negative, got -1"):
        X.repeat_interleave(-1, 0)
    with pytest.raises(fg.OpError, match=r"repeat_interleave: repeats must be non-negative, got \[1, -2\]"):
        X.repeat_interleave(fg.tensor([1, -2]), 0)
    with pytest.raises(fg.OpError, match=r"repeats must be an int or an integer tensor, got dtype float32; convert"):
        X.repeat_interleave(fg.tensor([1.0, 2.0]), 0)
    with pytest.raises(fg.OpError, match=r"repeats of shape \(2,\) must be 0-d or 1-d with one count per element of dim 1 \(size 3\)"):
        X.repeat_interleave(fg.tensor([1, 2]), 1)
    with pytest.raises(fg.OpError, match=r"output_size=4 does not match the sum of repeats \(3\)"):
        X.repeat_interleave(fg.tensor([1, 2]), 0, output_size=4)


def test_repeat_interleave_tensor_repeats_under_tracing_need_output_size():
    def without_size(x, r):
        return fg.repeat_interleave(fg.Tensor(x), fg.Tensor(r), 0).array

    with pytest.raises(fg.OpError, match=r"output size depends on their values.*pass output_size="):
        jax.jit(without_size)(jnp.ones(3), jnp.array([1, 2, 0]))

    def with_size(x, r):
        return fg.repeat_interleave(fg.Tensor(x), fg.Tensor(r), 0, output_size=3).array

    assert jax.jit(with_size)(jnp.arange(3.0), jnp.array([1, 2, 0])).tolist() == [0.0, 1.0, 1.0]


def test_split_bad_sizes():
    with pytest.raises(fg.OpError, match=r"split: split sizes \[1, 1\] must be non-negative and sum to the size of dim 1 \(3\)"):
        X.split([1, 1], 1)
    with pytest.raises(fg.OpError, match=r"split: split_size must be non-negative, got -1"):
        X.split(-1)
    with pytest.raises(fg.OpError, match=r"split: split_size can only be 0 if dimension 0 has size 0, but it has size 2"):
        X.split(0)


def test_chunk_and_tensor_split_need_positive_counts():
    with pytest.raises(fg.OpError, match=r"chunk: chunks must be greater than 0, got 0"):
        X.chunk(0)
    with pytest.raises(fg.OpError, match=r"tensor_split: number of sections must be greater than 0, got 0"):
        X.tensor_split(0)


def test_flip_repeated_dim():
    with pytest.raises(fg.OpError, match=r"flip: dims \[0, -2\] name a dimension more than once"):
        X.flip((0, -2))


def test_roll_shifts_and_dims_must_align():
    with pytest.raises(fg.OpError, match=r"roll: shifts and dims must align: got 2 shifts \[1, 2\] and 1 dims \[0\]"):
        X.roll((1, 2), 0)
    with pytest.raises(fg.OpError, match=r"roll: without dims, shifts must be a single int"):
        X.roll((1, 2))


def test_rot90_bad_dims():
    with pytest.raises(fg.OpError, match=r"rot90: the rotation dims must differ, got dim0 = 0 and dim1 = 0"):
        X.rot90(1, (0, 0))
    with pytest.raises(fg.OpError, match=r"rot90: dims must name exactly 2 dimensions"):
        X.rot90(1, (0,))


def test_narrow_out_of_range():
    with pytest.raises(IndexError, match=r"narrow: start -4 is out of range for dim 1 of size 3"):
        X.narrow(1, -4, 1)
    with pytest.raises(fg.OpError, match=r"narrow: start \(2\) \+ length \(2\) exceeds the size of dim 1 \(3\)"):
        X.narrow(1, 2, 2)
    with pytest.raises(fg.OpError, match=r"narrow: length must be non-negative, got -1"):
        X.narrow(1, 1, -1)


def test_diagonal_needs_two_distinct_dims():
    with pytest.raises(fg.OpError, match=r"diagonal: diagonal dimensions cannot be identical \(1, -1\) for shape \(2, 3\)"):
        X.diagonal(0, 1, -1)
    with pytest.raises(fg.OpError, match=r"diagonal: input must have at least 2 dimensions, got shape \(3,\)"):
        fg.ones(3).diagonal()
    with pytest.raises(fg.OpError, match=r"diag_embed: diagonal dimensions cannot be identical"):
        fg.diag_embed(X, 0, 0, 0)


def test_diag_and_triangles_need_the_right_rank():
    with pytest.raises(fg.OpError, match=r"diag: expected a 1-d or 2-d tensor, got shape \(1, 2, 3\)"):
        fg.diag(fg.ones(1, 2, 3))
    with pytest.raises(fg.OpError, match=r"tril: input must have at least 2 dimensions, got shape \(3,\)"):
        fg.tril(fg.ones(3))
    with pytest.raises(fg.OpError, match=r"triu: input must have at least 2 dimensions"):
        fg.ones(3).triu()


def test_pad_length_and_mode():
    with pytest.raises(fg.OpError, match=r"pad: the pad length must be divisible by 2"):
        F.pad(X, (1, 2, 3))
    with pytest.raises(fg.OpError, match=r"pad: pad \(1, 1, 1, 1, 1, 1\) names 3 dimensions but the input has only 2"):
        F.pad(X, (1,) * 6)
    with pytest.raises(fg.OpError, match=r"pad: unrecognised padding mode 'foo'; expected one of"):
        F.pad(X, (1, 1), mode="foo")
    with pytest.raises(fg.OpError, match=r"pad: padding \(-4, 1\) of dimension 1 \(size 3\).*negative size -0|negative size"):
        F.pad(X, (-4, 0))


def test_pad_non_constant_modes():
    with pytest.raises(fg.OpError, match=r"pad: mode 'reflect' with a pad of length 2 is not supported for a 1-d input"):
        F.pad(fg.ones(3), (1, 1), mode="reflect")
    with pytest.raises(fg.OpError, match=r"pad: reflect padding \(3, 1\) must be less than the size of dimension 1 \(3\)"):
        F.pad(X, (3, 1), mode="reflect")
    with pytest.raises(fg.OpError, match=r"pad: circular padding \(4, 1\) of dimension 1 .* would wrap around more than once"):
        F.pad(X, (4, 1), mode="circular")
    with pytest.raises(fg.OpError, match=r"pad: mode 'replicate' cannot pad dimension 1 of size 0"):
        F.pad(fg.ones(2, 0), (1, 1), mode="replicate")
    with pytest.raises(fg.OpError, match=r"pad: padding mode 'reflect' doesn't take a value argument"):
        F.pad(X, (1, 1), mode="reflect", value=2.0)


def test_pad_value_must_be_a_number():
    with pytest.raises(fg.OpError, match=r"pad: value must be a Python number, got Tensor"):
        F.pad(X, (1, 1), value=fg.tensor(1.0))


def test_flatten_start_after_end_is_an_error():
    with pytest.raises(fg.OpError, match=r"flatten: start_dim \(1\) cannot come after end_dim \(0\)"):
        fg.flatten(fg.ones(2, 3), 1, 0)
