"""LBFGS: iterates, counters and state against PyTorch (float64, with and without the strong Wolfe line
search); independent of torch: the direction against a dense BFGS transcription, the strong Wolfe
conditions at every accepted step, convergence on a quadratic and on Rosenbrock, an MLP fit, state
dicts, rebinding and errors."""
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn, optim

START = [-1.5, 2.0]

# (id, options, steps): trajectories that stay well conditioned, so rounding stays far below 1e-9
TORCH_CONFIGS = [
    ("fixed-step", dict(max_iter=4), 5),
    ("fixed-step-lr-short-history", dict(lr=0.5, max_iter=3, history_size=4), 6),
    ("strong-wolfe", dict(line_search_fn="strong_wolfe", max_iter=4, history_size=3), 4),
    ("strong-wolfe-default", dict(line_search_fn="strong_wolfe", history_size=5), 1),
    ("strong-wolfe-max-eval", dict(line_search_fn="strong_wolfe", max_iter=10, max_eval=7), 3),
]


def rosenbrock_np(v):
    x, y = v
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def rosenbrock_grad_np(v):
    x, y = v
    return np.array([-2 * (1 - x) - 400 * x * (y - x**2), 200 * (y - x**2)])


def _rosenbrock_problem(options, start=START):
    opt = optim.LBFGS([nn.Parameter(fg.tensor(start, dtype=fg.float64))], **options)

    def closure():
        x, y = opt.param_groups[0]["params"][0]
        return (1 - x) ** 2 + 100 * (y - x**2) ** 2

    return opt, closure


def _point(opt):
    return opt.param_groups[0]["params"][0].numpy().copy()


def _state(opt):
    (state,) = opt.state.values()
    return state


def _assert_state_equal(ours, theirs, where):
    assert list(ours) == list(theirs), where
    for key, value in theirs.items():
        mine = ours[key]
        if isinstance(value, list):
            assert len(mine) == len(value), (where, key)
            for a, b in zip(mine, value):
                if b is None:
                    assert a is None, (where, key)
                else:
                    np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-7, atol=1e-9,
                                               err_msg=f"{where}: {key}")
        elif isinstance(value, int) and not isinstance(mine, fg.Tensor):
            assert mine == value, (where, key)
        else:
            theirs_value = value.detach().numpy() if hasattr(value, "detach") else value
            np.testing.assert_allclose(np.asarray(mine), theirs_value, rtol=1e-7, atol=1e-9,
                                       err_msg=f"{where}: {key}")


@pytest.mark.parametrize("name,options,steps", TORCH_CONFIGS, ids=[c[0] for c in TORCH_CONFIGS])
def test_rosenbrock_iterates_and_state_match_torch(name, options, steps):
    torch = pytest.importorskip("torch")
    opt, closure = _rosenbrock_problem(options)
    w = torch.tensor(START, dtype=torch.float64, requires_grad=True)
    topt = torch.optim.LBFGS([w], **options)

    def torch_closure():
        topt.zero_grad()
        loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2
        loss.backward()
        return loss

    for step in range(steps):
        first = opt.step(closure)
        torch_first = topt.step(torch_closure)
        where = f"{name}: step {step + 1}"
        assert isinstance(first, fg.Tensor)
        np.testing.assert_allclose(first.item(), torch_first.item(), rtol=1e-9, atol=1e-13, err_msg=where)
        np.testing.assert_allclose(_point(opt), w.detach().numpy(), rtol=1e-9, atol=1e-11, err_msg=where)
        state, torch_state = _state(opt), topt.state[w]
        assert (state["func_evals"], state["n_iter"]) == (torch_state["func_evals"], torch_state["n_iter"]), where
        _assert_state_equal(state, torch_state, where)
    ours_sd, theirs_sd = opt.state_dict(), topt.state_dict()
    assert ours_sd["param_groups"] == theirs_sd["param_groups"]
    assert list(ours_sd["state"]) == list(theirs_sd["state"]) == [0]


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((16, 3)), rng.standard_normal((16, 2))


def _fg_mlp():
    return nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 2)).double()


def test_mlp_with_several_parameters_matches_torch_and_torch_state_loads():
    torch = pytest.importorskip("torch")
    twin = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    model = _fg_mlp()
    model.load_state_dict(twin.state_dict())
    x, y = (fg.tensor(a) for a in _data())
    tx, ty = (torch.tensor(a) for a in _data())
    options = dict(line_search_fn="strong_wolfe", max_iter=5, history_size=4)
    opt = optim.LBFGS(model.parameters(), **options)
    topt = torch.optim.LBFGS(twin.parameters(), **options)

    def torch_closure():
        topt.zero_grad()
        loss = torch.nn.functional.mse_loss(twin(tx), ty)
        loss.backward()
        return loss

    for step in range(2):
        opt.step(lambda: ((model(x) - y) ** 2).mean())
        topt.step(torch_closure)
        for ours, theirs in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-11,
                                       err_msg=f"step {step + 1}")
    # PyTorch's state dict continues in fgraph as in PyTorch
    resumed = _fg_mlp()
    resumed.load_state_dict(twin.state_dict())
    ropt = optim.LBFGS(resumed.parameters(), **options)
    ropt.load_state_dict(topt.state_dict())
    ropt.step(lambda: ((resumed(x) - y) ** 2).mean())
    topt.step(torch_closure)
    for ours, theirs in zip(resumed.parameters(), twin.parameters()):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-11)
    assert _state(ropt)["func_evals"] == topt.state[next(iter(twin.parameters()))]["func_evals"]


# -- independent of torch -------------------------------------------------------------------------------
def _bfgs_direction(g, old_dirs, old_stps, h_diag):
    """``-H g`` with ``H`` built by the dense BFGS inverse update from ``H_diag * I`` (oldest pair first)."""
    n = len(g)
    H = h_diag * np.eye(n)
    for y, s in zip(old_dirs, old_stps):
        rho = 1.0 / (y @ s)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    return -H @ g


def _quadratic(n=6, seed=1):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n), rng.standard_normal(n)


@pytest.mark.parametrize("history_size", [3, 100])
def test_direction_is_the_bfgs_inverse_hessian_times_the_gradient(history_size):
    A, b = _quadratic()
    w = nn.Parameter(fg.tensor(np.zeros(6)))
    opt = optim.LBFGS([w], max_iter=5, history_size=history_size)
    closure_calls = []

    def closure():
        v = opt.param_groups[0]["params"][0]
        closure_calls.append(1)
        return 0.5 * (v @ (fg.tensor(A) @ v)) - fg.tensor(b) @ v

    opt.step(closure)
    state = _state(opt)
    old_dirs = [v.numpy() for v in state["old_dirs"]]
    old_stps = [v.numpy() for v in state["old_stps"]]
    assert len(old_dirs) == min(history_size, 4)  # 5 iterations: 4 curvature pairs (y.s > 0 on a convex quadratic)
    for y, s, ro in zip(old_dirs, old_stps, state["ro"]):
        np.testing.assert_allclose(y, A @ s, rtol=1e-9, atol=1e-12)  # on a quadratic y = A s
        np.testing.assert_allclose(ro.item(), 1.0 / (y @ s), rtol=1e-12)
    y, s = old_dirs[-1], old_stps[-1]
    np.testing.assert_allclose(state["H_diag"].item(), (y @ s) / (y @ y), rtol=1e-12)
    expected = _bfgs_direction(state["prev_flat_grad"].numpy(), old_dirs, old_stps, state["H_diag"].item())
    np.testing.assert_allclose(state["d"].numpy(), expected, rtol=1e-9, atol=1e-12)
    # counters without line search: one evaluation per iteration (the last iteration's move is not evaluated)
    assert state["n_iter"] == 5 and state["func_evals"] == 5 == len(closure_calls)
    assert len(state["al"]) == history_size and sum(a is not None for a in state["al"]) == len(old_dirs)


def test_first_step_length_is_min_one_over_l1_norm_times_lr():
    A, b = _quadratic()
    w = nn.Parameter(fg.tensor(np.zeros(6)))
    opt = optim.LBFGS([w], lr=0.7, max_iter=1)
    opt.step(lambda: 0.5 * (opt.param_groups[0]["params"][0] @ (fg.tensor(A) @ opt.param_groups[0]["params"][0]))
             - fg.tensor(b) @ opt.param_groups[0]["params"][0])
    g = -b  # the gradient at 0
    t = min(1.0, 1.0 / np.abs(g).sum()) * 0.7
    np.testing.assert_allclose(_point(opt), -t * g, rtol=1e-12)
    assert _state(opt)["t"] == pytest.approx(t, rel=1e-12)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_quadratic_converges_to_the_analytic_minimiser(line_search_fn):
    A, b = _quadratic()
    w = nn.Parameter(fg.tensor(np.zeros(6)))
    # tolerance_change=0: the default stops when the loss changes by < 1e-9, i.e. ~1e-5 from the minimiser
    opt = optim.LBFGS([w], line_search_fn=line_search_fn, tolerance_grad=1e-10, tolerance_change=0.0)
    At, bt = fg.tensor(A), fg.tensor(b)

    def closure():
        v = opt.param_groups[0]["params"][0]
        return 0.5 * (v @ (At @ v)) - bt @ v

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(_point(opt), np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_rosenbrock_converges_to_one_one(line_search_fn):
    opt, closure = _rosenbrock_problem(dict(line_search_fn=line_search_fn, tolerance_grad=1e-10, tolerance_change=0.0))
    losses = [opt.step(closure).item() for _ in range(6)]
    np.testing.assert_allclose(_point(opt), [1.0, 1.0], atol=1e-9)
    assert losses[0] == pytest.approx(rosenbrock_np(START)) and losses[-1] < 1e-18
    default, default_closure = _rosenbrock_problem(dict(line_search_fn=line_search_fn))
    for _ in range(6):
        default.step(default_closure)
    np.testing.assert_allclose(_point(default), [1.0, 1.0], atol=1e-4)  # the default tolerances stop earlier


def test_strong_wolfe_conditions_hold_at_every_accepted_step():
    c1, c2 = 1e-4, 0.9
    opt, closure = _rosenbrock_problem(dict(line_search_fn="strong_wolfe", max_iter=1, max_eval=25))
    checked = 0
    for _ in range(25):
        x = _point(opt)
        g = rosenbrock_grad_np(x)
        if np.abs(g).max() <= 1e-7:
            break
        opt.step(closure)
        state = _state(opt)
        d, t = state["d"].numpy(), state["t"]
        np.testing.assert_allclose(_point(opt), x + t * d, rtol=1e-13, atol=1e-15)
        gtd = g @ d
        assert gtd < 0  # a descent direction
        assert rosenbrock_np(x + t * d) <= rosenbrock_np(x) + c1 * t * gtd  # sufficient decrease
        assert abs(rosenbrock_grad_np(x + t * d) @ d) <= -c2 * gtd  # curvature (strong)
        checked += 1
    assert checked >= 15


def test_cubic_interpolation_finds_the_minimiser_of_a_cubic():
    from fgraph.optim.lbfgs import _cubic_interpolate

    def f(x):
        return (x - 1.0) ** 3 / 3 - (x - 1.0) * 4.0  # minimum at x = 3

    def g(x):
        return (x - 1.0) ** 2 - 4.0

    assert _cubic_interpolate(0.5, f(0.5), g(0.5), 4.0, f(4.0), g(4.0)) == pytest.approx(3.0, rel=1e-12)
    assert _cubic_interpolate(4.0, f(4.0), g(4.0), 0.5, f(0.5), g(0.5)) == pytest.approx(3.0, rel=1e-12)
    assert _cubic_interpolate(0.5, f(0.5), g(0.5), 4.0, f(4.0), g(4.0), bounds=(0.0, 2.0)) == 2.0
    assert _cubic_interpolate(1.0, 0.0, 1.0, 1.0, 0.0, 1.0, bounds=(0.0, 2.0)) == 1.0  # degenerate: the middle


def test_mlp_fit_decreases_the_loss_and_rebinds_the_model_parameters():
    fg.manual_seed(0)
    model = _fg_mlp()
    x, y = (fg.tensor(a) for a in _data())
    opt = optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe", max_iter=10)
    old = model[0].weight
    old_values = old.numpy().copy()

    def closure():
        return ((model(x) - y) ** 2).mean()

    start = closure().item()
    for _ in range(4):
        opt.step(closure)
    assert closure().item() < 0.5 * start
    assert model[0].weight is not old
    np.testing.assert_array_equal(old.numpy(), old_values)  # the old record is unchanged
    assert [id(p) for p in opt.parameters()] == [id(p) for p in model.parameters()]
    assert list(opt.state) == [model[0].weight]  # PyTorch keeps the state on the first parameter


def test_closure_may_return_loss_and_gradients():
    opt, closure = _rosenbrock_problem(dict(line_search_fn="strong_wolfe"))
    twin, twin_closure = _rosenbrock_problem(dict(line_search_fn="strong_wolfe"))

    def with_grads():
        loss = twin_closure()
        return loss, loss.backward()

    for _ in range(2):
        opt.step(closure)
        twin.step(with_grads)
    # equal up to reassociation: either backward may run fused (compiled in the background) or node by node
    np.testing.assert_allclose(_point(opt), _point(twin), rtol=1e-10)


def test_state_dict_round_trip_through_fg_save_resumes_the_same_trajectory(tmp_path):
    options = dict(line_search_fn="strong_wolfe", max_iter=3, history_size=4)
    opt, closure = _rosenbrock_problem(options)
    for _ in range(4):
        opt.step(closure)
    first, first_closure = _rosenbrock_problem(options)
    for _ in range(2):
        first.step(first_closure)
    fg.save(first.state_dict(), tmp_path / "lbfgs.safetensors")
    resumed, resumed_closure = _rosenbrock_problem(options, start=_point(first).tolist())
    resumed.load_state_dict(fg.load(tmp_path / "lbfgs.safetensors"))
    for _ in range(2):
        resumed.step(resumed_closure)
    np.testing.assert_allclose(_point(resumed), _point(opt), rtol=1e-12, atol=1e-14)
    assert _state(resumed)["func_evals"] == _state(opt)["func_evals"]


def test_optimal_start_returns_at_once():
    opt, closure = _rosenbrock_problem({}, start=[1.0, 1.0])
    assert opt.step(closure).item() == 0.0
    assert _state(opt) == {"func_evals": 1, "n_iter": 0}


def test_errors_name_the_fix():
    model = _fg_mlp()
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": model[0].parameters()}, {"params": model[2].parameters()}])
    with pytest.raises(ValueError, match="only 'strong_wolfe'"):
        optim.LBFGS(model.parameters(), line_search_fn="armijo")
    with pytest.raises(ValueError, match="invalid learning rate"):
        optim.LBFGS(model.parameters(), lr=-1.0)
    with pytest.raises(ValueError, match="invalid history_size"):
        optim.LBFGS(model.parameters(), history_size=0)
    opt = optim.LBFGS(model.parameters())
    with pytest.raises(TypeError, match="needs a closure"):
        opt.step()
    x = fg.ones(2, 3, dtype=fg.float64)
    with pytest.raises(TypeError, match="not the gradients"):
        opt.step(model(x).sum().backward())
    with pytest.raises(ValueError, match="one-element Tensor"):
        opt.step(lambda: model(x))
    with pytest.raises(RuntimeError, match="zero_grad"):
        opt.zero_grad()
    opt.add_param_group({"params": [nn.Parameter(fg.zeros(2))]})
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        opt.step(lambda: model(x).sum())
