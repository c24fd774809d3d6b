"""REINFORCE (Williams, 1992) with a ``Categorical`` policy on a small gridworld the script defines.

The world is a 5x5 grid with walls; an agent starts in the top-left corner and must reach the
bottom-right one. Each move costs 0.01 (up, down, left, right; bumping into a wall or the
border leaves it in place); reaching the goal pays 1 and ends the episode; an episode also
ends after 30 moves. The policy is a small MLP from the one-hot state to action logits,
``pi(a | s) = Categorical(logits=policy(s))``. Actions come from ``pi.sample()``, and the
policy gradient is the score-function estimator

    grad J = E[ sum_t grad log pi(a_t | s_t) * (G_t - b) ],

with ``G_t`` the return from step ``t`` on and ``b`` the batch's mean return (a baseline that
lowers the variance without biasing the gradient), plus a small entropy bonus
(``pi.entropy()``) that keeps early exploration alive. A batch of 32 episodes runs side by
side (one policy call per time step for all of them).

It prints the learning curve (mean return and episode length every few iterations) and saves
``reinforce_gridworld.png``.

Run: python examples/reinforce_gridworld.py [--out DIR] [--quick] [--iterations N]   (about 30 s on a 2-core CPU)
"""
from __future__ import annotations

import numpy as np

import _common
import fgraph as fg
from fgraph import nn
from fgraph.distributions import Categorical

SIZE = 5
WALLS = {(1, 1), (1, 2), (1, 3), (3, 1), (3, 2), (3, 3)}
GOAL = (SIZE - 1, SIZE - 1)
MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])  # up, down, left, right
STEP_COST, GOAL_REWARD, HORIZON = 0.01, 1.0, 30
EPISODES = 32
ITERATIONS = 150
LR = 1e-2
ENTROPY_BONUS = 0.01
FIGURE = "reinforce_gridworld.png"


class GridWorld:
    """``EPISODES`` copies of the grid, stepped together; states are cell indices ``row * SIZE + col``."""

    def __init__(self, n: int) -> None:
        self.pos = np.zeros((n, 2), dtype=np.int64)
        self.done = np.zeros(n, dtype=bool)

    def states(self) -> np.ndarray:
        return self.pos[:, 0] * SIZE + self.pos[:, 1]

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Move every unfinished episode; return the rewards (0 for finished ones)."""
        target = np.clip(self.pos + MOVES[actions], 0, SIZE - 1)
        blocked = np.array([tuple(t) in WALLS for t in target])
        moving = ~self.done & ~blocked
        self.pos = np.where(moving[:, None], target, self.pos)
        at_goal = (self.pos == GOAL).all(1)
        rewards = np.where(self.done, 0.0, np.where(at_goal, GOAL_REWARD, -STEP_COST))
        self.done = self.done | at_goal
        return rewards


def rollout(policy: nn.Module, generator: fg.Generator) -> tuple:
    """Run a batch of episodes; return states ``(T, N)``, actions ``(T, N)``, rewards ``(T, N)``, alive ``(T, N)``."""
    env = GridWorld(EPISODES)
    states, actions, rewards, alive = [], [], [], []
    eye = np.eye(SIZE * SIZE, dtype=np.float32)
    with fg.no_grad():
        for _ in range(HORIZON):
            s = env.states()
            pi = Categorical(logits=policy(fg.tensor(eye[s])))
            a = np.asarray(pi.sample(generator=generator))
            alive.append(~env.done)
            states.append(s)
            actions.append(a)
            rewards.append(env.step(a))  # always HORIZON steps: fixed shapes, so every kernel compiles once
    return np.stack(states), np.stack(actions), np.stack(rewards), np.stack(alive)


def returns_to_go(rewards: np.ndarray) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(rewards, 0), 0), 0).copy()


def train(iterations: int, seed: int) -> tuple:
    fg.manual_seed(seed)
    generator = fg.Generator(seed)
    policy = nn.Sequential(nn.Linear(SIZE * SIZE, 64), nn.Tanh(), nn.Linear(64, 4))
    opt = fg.optim.Adam(policy.parameters(), lr=LR)
    eye = np.eye(SIZE * SIZE, dtype=np.float32)
    curve = []
    bar = _common.progress(range(iterations), desc="REINFORCE", mininterval=0.5)
    for it in bar:
        states, actions, rewards, alive = rollout(policy, generator)
        g = returns_to_go(rewards)
        advantage = (g - g[0].mean()) * alive  # baseline: the batch's mean return
        pi = Categorical(logits=policy(fg.tensor(eye[states])))
        log_prob = pi.log_prob(fg.tensor(actions))
        mask = fg.tensor(alive.astype(np.float32))
        objective = (log_prob * fg.tensor(advantage.astype(np.float32))).sum() / EPISODES
        bonus = ENTROPY_BONUS * (pi.entropy() * mask).sum() / mask.sum()
        opt.step((-(objective + bonus)).backward())
        mean_return, length = float(rewards.sum(0).mean()), float(alive.sum(0).mean())
        curve.append((mean_return, length))
        bar.set_postfix(ret=f"{mean_return:.3f}", len=f"{length:.1f}")
        if it % max(iterations // 10, 1) == 0 or it == iterations - 1:
            bar.write(f"iteration {it + 1:4d}: mean return {mean_return:6.3f}, episode length {length:5.1f}")
    return policy, np.array(curve)


def save_figure(curve: np.ndarray, path) -> None:
    plt = _common.pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    left.plot(curve[:, 0])
    left.set_xlabel("iteration")
    left.set_ylabel("mean return")
    right.plot(curve[:, 1])
    right.axhline(2 * (SIZE - 1), ls="--", color="gray", label="shortest path")
    right.set_xlabel("iteration")
    right.set_ylabel("episode length")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__, figure=FIGURE)
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help=f"policy updates (default {ITERATIONS})")
    args = _common.parse_args(parser)
    _, curve = train(3 if args.quick else args.iterations, args.seed)
    first, last = curve[: max(len(curve) // 10, 1)].mean(0), curve[-max(len(curve) // 10, 1):].mean(0)
    print(f"mean return: {first[0]:.3f} -> {last[0]:.3f}; episode length: {first[1]:.1f} -> {last[1]:.1f} "
          f"(shortest path {2 * (SIZE - 1)})")
    figure = args.out / FIGURE
    save_figure(curve, figure)
    print(f"wrote {figure}")
    if _common.should_publish(args):
        print(f"published {_common.publish(figure, FIGURE)}")


if __name__ == "__main__":
    main()
