"""Runs the filter oracle of the switching-latent authors' code
(``alesnow97/SwitchingLatentBandits``) for ``benchmarks.switching_latent``, in a process of its
own: their code draws from numpy's
global generator, finds its root by walking up the working directory to a folder named
``SwitchingLatentBandits`` and writes an experiment folder below it.

    python benchmarks/switching_latent_driver.py CHECKOUT PROTOCOL RUNS HORIZON SEED OUT.json

Their Figure 2a loop (``RegretFigure2a.run`` of ``simulations/regret_figure_2a.py``, set up as
``run_files/main_figure_2a.py`` sets it up: ``utils.load_files`` on their stored bandit 0 of
``experiments/regret_figure_2a/3states_4actions_5obs``, then ``SwitchingBanditEnv``) runs
unchanged in a scratch copy of the files it reads (their checkout is left as it is), with
numpy's global generator seeded ``SEED`` once before its ``RUNS`` experiments. In that loop:

* their ``OraclePolicy`` plays; ``PROTOCOL`` is ``as-written`` (their class as it is: the
  belief propagated as ``b @ P.T``) or ``corrected`` (the same class, told ``P.T`` as its
  transition matrix, so that its update's ``@ self.transition_matrix.T`` propagates ``b @ P``,
  as their chain moves: ``S_{t+1} ~ transition_matrix[S_t]``);
* the five other policies of the loop (SL-EC, SW-UCB, epsilon-greedy, Exp3.S, the particle
  filter) are idle stand-ins (arm 0, no learning): the loop still draws their outcomes from the
  global generator, which changes the oracle's numbers but not their law, and SL-EC and the
  particle filter would take nearly all the time;
* each round, the oracle's arm and the true state are recorded: the state is the loop's local
  ``current_state``, read from the loop's frame when it asks the oracle for an arm. Their loop
  records ``[arm, realised reward]`` per round and measures the other policies' regret as the
  oracle's realised reward minus theirs; the states stay in a local (``states_list``) that is
  neither saved nor returned, hence the frame.

Writes ``[regret of each run]``: ``sum_t max_a mu(a, S_t) - mu(A_t, S_t)`` with
``mu(a, s) = sum_o O[s, a, o] r[o]`` from their environment's ``state_action_reward_matrix``
and ``possible_rewards``: the regret nslb's CSVs hold.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

PROTOCOLS = ("corrected", "as-written")
INSTANCE = Path("experiments/regret_figure_2a/3states_4actions_5obs")
BANDIT = 0
IDLE = ("OurPolicyFigure2", "SlidingWindowUCB", "EpsilonGreedy", "Exp3S", "ParticleFilter")


class Idle:
    """A stand-in for the loop's other policies: arm 0 every round, nothing learnt."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def choose_arm(self) -> int:
        return 0

    def update(self, *args: Any) -> None:
        pass


def _scratch(checkout: Path, root: Path) -> None:
    """The files their Figure 2a run reads, copied from ``checkout`` into ``root``."""
    skip = shutil.ignore_patterns("__pycache__")
    for folder in ("environment", "policies", "simulations"):
        shutil.copytree(checkout / folder, root / folder, ignore=skip)
    shutil.copy2(checkout / "utils.py", root / "utils.py")
    bandit = INSTANCE / f"bandit{BANDIT}"
    (root / bandit).mkdir(parents=True)
    shutil.copy2(checkout / bandit / "bandit_info.json", root / bandit / "bandit_info.json")


def _recorded(oracle: type, corrected: bool) -> type:
    """Their ``OraclePolicy``, recording each round's true state and arm in ``runs``."""

    class Recorded(oracle):  # type: ignore[misc, valid-type]
        runs: list[tuple[list[int], list[int]]] = []

        def __init__(self, switching_env: Any) -> None:
            super().__init__(switching_env)
            if corrected:  # their update multiplies by transition_matrix.T: told P.T, it uses P
                self.transition_matrix = np.asarray(switching_env.transition_matrix).T
            self.states: list[int] = []
            self.arms: list[int] = []
            Recorded.runs.append((self.states, self.arms))

        def choose_arm(self) -> Any:
            arm = super().choose_arm()
            self.states.append(int(sys._getframe(1).f_locals["current_state"]))
            self.arms.append(int(arm))
            return arm

    return Recorded


def run(checkout: Path, protocol: str, runs: int, horizon: int, seed: int) -> list[float]:
    """Each run's regret of their oracle under ``protocol`` (module docstring)."""
    if protocol not in PROTOCOLS:
        raise SystemExit(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "SwitchingLatentBandits"  # their utils.get_base_path looks for it
        _scratch(checkout.resolve(), root)
        os.chdir(root)
        sys.path.insert(0, str(root))
        import matplotlib

        matplotlib.use("Agg")  # their run plots and calls plt.show()
        warnings.filterwarnings("ignore", message=".*non-interactive.*")
        import utils
        from environment.switchingBanditEnv import SwitchingBanditEnv
        from simulations import regret_figure_2a as figure

        for name in IDLE:
            setattr(figure, name, Idle)
        figure.OraclePolicy = _recorded(figure.OraclePolicy, protocol == "corrected")
        S, K, N, P, reference, obs, rewards = utils.load_files(str(root / INSTANCE), BANDIT, False)
        env = SwitchingBanditEnv(
            num_states=S, num_actions=K, num_obs=N, transition_matrix=P,
            state_action_reward_matrix=obs, reference_matrix=reference,
            possible_rewards=rewards,
        )  # fmt: skip
        np.random.seed(seed)  # noqa: NPY002  (their code draws from the global generator)
        # main_figure_2a's values; besides the runs, the bandit and saving, only the idle
        # policies would read them
        experiment = figure.RegretFigure2a(
            env,
            num_experiments=runs,
            sliding_window_size=1500,
            epsilon=0.1,
            exp3S_gamma=0.01,
            exp3S_normalization_factor=100,
            exp3S_limit=20,
            num_particles=200,
            lowest_prob=1e-4,
            num_lowest_prob=50,
            dirichlet_prior=None,
            save_results=False,
            loaded_bandit=True,
            save_bandit_info=False,
            bandit_num=BANDIT,
        )
        experiment.run(total_horizon=horizon, exploration_horizon=0.0)  # read by SL-EC only
        os.chdir(checkout.resolve())
    means = (np.asarray(obs) * np.asarray(rewards)).sum(axis=2)  # (S, K)
    recorded = figure.OraclePolicy.runs
    if len(recorded) != runs or any(len(arms) != horizon for _, arms in recorded):
        raise SystemExit(f"expected {runs} runs of {horizon} rounds, got {len(recorded)}")
    regrets = []
    for states, arms in recorded:
        s, a = np.asarray(states), np.asarray(arms)
        regrets.append(float((means[s].max(axis=1) - means[s, a]).sum()))
    return regrets


if __name__ == "__main__":
    checkout, protocol, out = Path(sys.argv[1]), sys.argv[2], sys.argv[6]
    runs, horizon, seed = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    with contextlib.redirect_stdout(io.StringIO()):  # their code prints as it goes
        found = run(checkout, protocol, runs, horizon, seed)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(found, handle)
