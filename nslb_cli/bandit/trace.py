"""The trace of a simulation: what happened in every round of every run (numpy only).

Produced by the simulator, written by ``nslb_cli.store.results``; depends on numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_BELIEF = -1


WORLDS = ("reward", "expected_reward", "optimal_reward")
"""The world's numbers of each round (its rewards), which its parameters scale."""
PER_ROUND = ("action", *WORLDS, "state", "belief", "p_true_state")


def kept_rounds(horizon: int, every: int) -> np.ndarray:
    """The rounds (1-based) that ``run.every=every`` keeps of ``horizon``: every
    ``every``-th and the last (``horizon`` alone when ``every`` exceeds it)."""
    return np.minimum(np.arange(1, -(-horizon // every) + 1) * every, horizon)


@dataclass
class Trace:
    """Per run and round, what happened; every array is ``(R, n)``.

    ``belief`` is ``NO_BELIEF`` and ``p_true_state`` NaN for agents without a belief.

    A trace may hold some rounds only (the JAX engine keeps on its device those that
    ``run.every`` keeps): ``rounds`` the rounds held (1-based), and ``cumulative`` the
    columns summed over every round (``cum_regret``, ``cum_reward``) at those rounds.

    ``seconds``: the wall-clock time simulating these runs took, where the engine measured it
    (a batch shared by several jobs: each job's runs their share); ``None``: the caller times it.
    """

    seeds: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    expected_reward: np.ndarray
    optimal_reward: np.ndarray
    state: np.ndarray
    belief: np.ndarray
    p_true_state: np.ndarray
    summary: dict[str, np.ndarray] = field(default_factory=dict)
    rounds: np.ndarray | None = None
    cumulative: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float | None = None

    def runs(self, rows: slice) -> Trace:
        """The trace of runs ``rows``, with their share of ``seconds``."""
        arrays = {name: getattr(self, name)[rows] for name in ("seeds", *PER_ROUND)}
        share = len(arrays["seeds"]) / max(len(self.seeds), 1)
        return Trace(
            **arrays,
            summary={key: value[rows] for key, value in self.summary.items()},
            rounds=self.rounds,
            cumulative={key: value[rows] for key, value in self.cumulative.items()},
            seconds=None if self.seconds is None else self.seconds * share,
        )

    @property
    def regret(self) -> np.ndarray:
        """``max_a mu(a, X_t, S_t) - mu(A_t, X_t, S_t)``: the expected, noise-free regret."""
        return self.optimal_reward - self.expected_reward

    @classmethod
    def joined(cls, parts: list[Trace]) -> Trace:
        """The trace of the runs of ``parts`` one after another (the runs axis joined)."""
        arrays = {
            name: np.concatenate([getattr(part, name) for part in parts])
            for name in ("seeds", *PER_ROUND)
        }
        summary = {
            key: np.concatenate([part.summary[key] for part in parts]) for key in parts[0].summary
        }
        cumulative = {
            key: np.concatenate([part.cumulative[key] for part in parts])
            for key in parts[0].cumulative
        }
        timed = [part.seconds for part in parts if part.seconds is not None]
        seconds = sum(timed) if len(timed) == len(parts) else None
        return cls(
            **arrays,
            summary=summary,
            rounds=parts[0].rounds,
            cumulative=cumulative,
            seconds=seconds,
        )


class BrokenContract(RuntimeError):
    """An agent's decisions break what every agent promises (docs/design.md §5): an arm
    outside ``0 … K-1``, a believed state outside ``0 … S-1``, a probability of the true
    state outside ``[0, 1]``; or, on the JAX engine, a decision of the wrong shape or type.
    The message is one line."""


class NotFinite(BrokenContract):
    """A probability of the true state that is not a number: the agent's arithmetic
    overflowed, which ``nslb_cli.bandit.finite.arithmetic`` says as the values to lower."""


VIOLATIONS = ("arm", "believed state", "probability of the true state")
"""What ``check_decisions`` checks, in order."""


def violation(kind: int, t: int, seed: int, value: float, n_arms: int, n_states: int) -> str:
    """The line of a decision out of range: its ``kind`` (an index of ``VIOLATIONS``),
    round ``t`` (1-based), seed and value."""
    allowed = (f"0 … {n_arms - 1}", f"0 … {n_states - 1}, or {NO_BELIEF} for none", "[0, 1]")
    shown = f"{int(value)}" if kind < 2 and np.isfinite(value) else f"{value}"
    return f"its {VIOLATIONS[kind]} in round {t} of seed {seed} is {shown}, outside {allowed[kind]}"


def check_decisions(trace: Trace, n_arms: int, n_states: int) -> None:
    """Raise ``BrokenContract`` at the first round of ``trace`` whose decision breaks
    the contract (an agent without a belief reports ``NO_BELIEF`` and NaN)."""
    believed = trace.belief != NO_BELIEF
    probability = trace.p_true_state
    checks = (
        ((trace.action < 0) | (trace.action >= n_arms), trace.action),
        (believed & ((trace.belief < 0) | (trace.belief >= n_states)), trace.belief),
        (believed & ~((probability >= 0.0) & (probability <= 1.0 + 1e-9)), probability),
    )
    for kind, (broken, values) in enumerate(checks):
        if broken.any():
            run, at = np.unravel_index(int(np.argmax(broken)), broken.shape)
            t = int(trace.rounds[at]) if trace.rounds is not None else int(at) + 1
            seed, value = int(trace.seeds[run]), float(values[run, at])
            line = violation(kind, t, seed, value, n_arms, n_states)
            raise NotFinite(line) if kind == 2 and not np.isfinite(value) else BrokenContract(line)
