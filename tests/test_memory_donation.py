"""The optimizer step reuses the buffers only it can reach (issue 34: peak memory of the eager step).

Adam's moments are written into their old buffers and the new parameters into the gradients'
buffers when the gradients were passed as a temporary (``opt.step(loss.backward())``); every record
a user (or a graph) still holds stays readable. Reuse is read off buffer addresses: a result
computed while its input is alive cannot get the input's address unless it was donated.
"""
import numpy as np
import pytest

import fgraph as fg
from fgraph.optim import _donation

pytestmark = pytest.mark.skipif(_donation.TEMPORARY_ARGUMENT is None,
                                reason="reference counts not calibrated on this interpreter: nothing is donated")

X = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def _setup():
    model = fg.nn.Linear(3, 2)
    return model, fg.optim.Adam(model.parameters(), lr=0.1), fg.tensor(X)


def _loss(model, x):
    return (model(x) ** 2).mean()


def _address(t):
    return t.array.unsafe_buffer_pointer()


def _moment_addresses(opt):
    return [_address(opt.state[p][k]) for p in opt.param_groups[0]["params"] for k in ("exp_avg", "exp_avg_sq")]


def test_moments_and_gradients_buffers_are_reused_and_one_kernel_serves_every_step():
    model, opt, x = _setup()
    opt.step(_loss(model, x).backward())  # the first state is made (and donated) here
    for _ in range(2):
        moments = _moment_addresses(opt)
        grads = _loss(model, x).backward()
        grad_addresses = [_address(grads[p]) for p in model.parameters()]
        box = [grads]
        del grads
        opt.step(box.pop())  # a temporary, like opt.step(loss.backward())
        assert _moment_addresses(opt) == moments
        assert [_address(p) for p in model.parameters()] == grad_addresses  # new parameters in the gradients' buffers
    (kernel,) = opt._kernels.values()
    assert kernel._cache_size() == 1


def test_what_a_user_holds_stays_readable_and_is_not_reused():
    model, opt, x = _setup()
    opt.step(_loss(model, x).backward())
    weight = model.weight
    old_weight = weight.numpy().copy()
    moment = opt.state[weight]["exp_avg"]  # a state Tensor kept by the user
    old_moment = moment.numpy().copy()
    saved = opt.state_dict()  # holds every state Tensor
    grads = _loss(model, x).backward()  # gradients the user keeps
    old_grad = grads[weight].numpy().copy()
    opt.step(grads)
    np.testing.assert_array_equal(weight.numpy(), old_weight)  # parameters are never donated
    np.testing.assert_array_equal(moment.numpy(), old_moment)
    for entry in saved["state"].values():
        for value in entry.values():
            value.numpy()
    np.testing.assert_array_equal(grads[weight].numpy(), old_grad)
    assert _address(opt.state[model.weight]["exp_avg"]) != _address(moment)
    assert not np.array_equal(model.weight.numpy(), old_weight)


def test_a_gradient_array_shared_with_another_record_is_not_donated():
    model, opt, x = _setup()
    opt.step(_loss(model, x).backward())
    grads = _loss(model, x).backward()
    twin = grads[model.bias].detach()  # another record over the same array
    values = twin.numpy().copy()
    box = [grads]
    del grads
    opt.step(box.pop())
    np.testing.assert_array_equal(twin.numpy(), values)


def test_a_sequence_of_gradients_from_fg_grad_is_donated_only_when_temporary():
    model, opt, x = _setup()
    kept = fg.grad(_loss(model, x), list(model.parameters()))
    values = [g.numpy().copy() for g in kept]
    opt.step(kept)
    for g, v in zip(kept, values):
        np.testing.assert_array_equal(g.numpy(), v)
    grads = fg.grad(_loss(model, x), list(model.parameters()))
    addresses = [_address(t) for t in grads]
    box = [grads]
    del grads
    opt.step(box.pop())
    assert [_address(p) for p in model.parameters()] == addresses
