"""The conformance checks every agent must pass (``nslb check agent=NAME``).

Each setting is played three times: ``SEEDS`` in one batch, the same after reseeding the global
generators, and ``ALONE`` by itself; ``CHECKS`` then reads the plays. The memory check's
``tracemalloc`` does not see compiled code's own arrays.
"""

from __future__ import annotations

import contextlib
import random
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.bandit.trace import BrokenContract, Trace
from nslb_cli.bandit.world import World
from nslb_cli.common.apart import step
from nslb_cli.common.errors import describe_error
from nslb_cli.common.stopping import stopped_by
from nslb_cli.runner import memory
from nslb_cli.runner.engines import trace_bytes
from nslb_cli.runner.simulate import build_agent, simulate

SEEDS = (2, 7, 11, 30)
ALONE = 7
POSTERIOR_TOLERANCE = 1e-9
STEP_SECONDS = 300.0
"""How long one step of the checks may take (the first play compiles nslb's kernels)."""
# A play may allocate this many times the declared bytes (and the trace's), plus this much.
MEMORY_FACTOR = 10
MEMORY_SLACK = 4 * 2**20
DEFAULT_ENVS: tuple[dict[str, Any], ...] = (
    {"name": "synthetic", "dynamics": "fixed", "horizon": 120, "period": 40},
    {"name": "synthetic", "model": "prior", "horizon": 120, "switch_prob": 0.02},
)


class Environment(Protocol):
    """An environment class: ``build(params, seeds)`` makes a world."""

    def build(self, params: Any, seeds: np.ndarray) -> World: ...


@dataclass(frozen=True)
class Setting:
    """An environment to check an agent on: its class (with ``build``) and parameters."""

    env: Environment
    params: Any

    @property
    def label(self) -> str:
        """``synthetic (dynamics=fixed, horizon=120)``: the name and non-default values."""
        defaults = type(self.params)()
        changed = [
            f"{f.name}={getattr(self.params, f.name)}"
            for f in fields(self.params)
            if getattr(self.params, f.name) != getattr(defaults, f.name)
        ]
        return f"{self.params.name} ({', '.join(changed)})" if changed else self.params.name


@dataclass(frozen=True)
class Outcome:
    """The result of one check: ``status`` is ``pass``, ``FAIL`` or ``skip``."""

    check: str
    status: str
    detail: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def line(self) -> str:
        return f"{self.status:<4}  {self.check:<22}  {self.detail}"


class _Recorder(Agent):
    """Plays ``agent`` unchanged, noting the first breach of the interface in its outputs."""

    def __init__(self, agent: Agent) -> None:
        super().__init__(agent.params, agent.problem, agent.model, agent.rng)
        self.agent = agent
        self.t = 0
        self.action_error: str | None = None
        self.belief_error: str | None = None
        self.belief_rounds: list[bool] = []

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        self.t = t
        actions = self.agent.act(t, contexts)
        if self.action_error is None:
            problem = _action_problem(actions, self.problem.n_runs, self.problem.n_arms)
            self.action_error = None if problem is None else f"round {t + 1}: {problem}"
        return actions

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        self.agent.update(t, contexts, actions, rewards)

    def belief(self) -> Belief | None:
        view = self.agent.belief()
        self.belief_rounds.append(view is not None)
        if view is not None and self.belief_error is None:
            problem = _belief_problem(view, self.problem.n_runs, self.problem.n_states)
            self.belief_error = None if problem is None else f"round {self.t + 1}: {problem}"
        return view

    def summary(self) -> dict[str, np.ndarray]:
        return self.agent.summary()

    def detection_counts(self) -> np.ndarray | None:
        return self.agent.detection_counts()


def _action_problem(actions: Any, runs: int, arms: int) -> str | None:
    if not isinstance(actions, np.ndarray):
        return f"act returned {type(actions).__name__}, not a numpy array"
    if actions.shape != (runs,):
        return f"act returned shape {actions.shape}, expected ({runs},)"
    if not np.issubdtype(actions.dtype, np.integer):
        return f"act returned dtype {actions.dtype}, expected integers"
    if actions.min() < 0 or actions.max() >= arms:
        bad = actions.min() if actions.min() < 0 else actions.max()
        return f"act returned arm {bad}, outside [0, {arms})"
    return None


def _belief_problem(view: Any, runs: int, states: int) -> str | None:
    if not isinstance(view, Belief):
        return f"belief returned {type(view).__name__}, not a Belief or None"
    state, posterior = np.asarray(view.state), np.asarray(view.posterior)
    if state.shape != (runs,) or not np.issubdtype(state.dtype, np.integer):
        return (
            f"belief state: shape {state.shape}, dtype {state.dtype}; expected ({runs},) integers"
        )
    if state.min() < 0 or state.max() >= states:
        bad = state.min() if state.min() < 0 else state.max()
        return f"belief state {bad} outside [0, {states})"
    if posterior.shape != (runs, states):
        return f"belief posterior has shape {posterior.shape}, expected ({runs}, {states})"
    if not np.all(np.isfinite(posterior) & (posterior >= 0)):
        return "belief posterior has negative or non-finite entries"
    worst = np.abs(posterior.sum(axis=1) - 1.0).max()
    if worst > POSTERIOR_TOLERANCE:
        return f"belief posterior rows sum to 1 ± {worst:.2g} (tolerance {POSTERIOR_TOLERANCE:g})"
    return None


@dataclass(frozen=True)
class _Play:
    """One simulation: the world played, the recorded agent, and the trace or the error; for a
    measured play, the peak bytes allocated building the agent and playing."""

    world: World
    recorder: _Recorder | None
    trace: Trace | None
    error: str | None
    peak: int | None = None

    @property
    def played(self) -> Trace:
        """The trace of a play that finished (the checks that read it run only then)."""
        assert self.trace is not None, self.error
        return self.trace

    @property
    def agent(self) -> _Recorder:
        """The recorded agent of a play that built one."""
        assert self.recorder is not None, self.error
        return self.recorder


@dataclass(frozen=True)
class _Runs:
    """The three plays of one setting (the second measured), and a world built for ``SEEDS``
    that nobody played; the agent class and parameters played."""

    cls: type[Agent]
    params: Any
    setting: Setting
    batch: _Play
    again: _Play
    alone: _Play
    fresh: World

    @property
    def plays(self) -> tuple[_Play, _Play, _Play]:
        return (self.batch, self.again, self.alone)


@contextlib.contextmanager
def _global_random_state(seed: int) -> Iterator[None]:
    """Reseed NumPy's and Python's global generators (an agent must not depend on them)."""
    numpy_state, python_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(numpy_state)  # noqa: NPY002
        random.setstate(python_state)


@contextlib.contextmanager
def _allocations(measure: bool) -> Iterator[Callable[[], int | None]]:
    """Within the block, a function giving the peak bytes allocated since it began if ``measure``,
    else ``None``. A trace already running (``PYTHONTRACEMALLOC``) is left running."""
    if not measure:
        yield lambda: None
        return
    running = tracemalloc.is_tracing()
    if not running:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        yield lambda: tracemalloc.get_traced_memory()[1] - start
    finally:
        if not running:
            tracemalloc.stop()


def _play(
    cls: type[Agent],
    params: Any,
    setting: Setting,
    seeds: Sequence[int],
    key: int,
    measure: bool = False,
) -> _Play:
    """Build a world for ``seeds`` and play it; with ``measure``, note the allocations' peak."""
    seeds_array = np.asarray(seeds, dtype=np.int64)
    world = setting.env.build(setting.params, seeds_array)
    recorder = None
    try:
        with _global_random_state(key), _allocations(measure) as allocated:
            recorder = _Recorder(build_agent(cls, params, world, BatchRNG(seeds_array)))
            trace = simulate(world, recorder, progress=False)
            peak = allocated()
    except BaseException as err:  # the agent's code may raise anything: that is the finding
        if stopped_by(err) is not None:
            raise
        return _Play(world, recorder, None, describe_error(err))
    return _Play(world, recorder, trace, None, peak)


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise equality, NaN equal to NaN."""
    equal = x == y
    if np.issubdtype(x.dtype, np.floating) and np.issubdtype(y.dtype, np.floating):
        equal |= np.isnan(x) & np.isnan(y)
    return equal


TRACE_FIELDS = ("action", "reward", "expected_reward", "optimal_reward", "belief", "p_true_state")


def _row_difference(a: Trace, i: int, b: Trace, j: int) -> str | None:
    """Where run ``i`` of ``a`` and run ``j`` of ``b`` first differ, if they do."""
    for name in TRACE_FIELDS:
        x, y = getattr(a, name)[i], getattr(b, name)[j]
        same = _same(x, y)
        if not same.all():
            t = int(np.argmin(same))
            return f"seed {a.seeds[i]}: {name} in round {t + 1} is {x[t]}, then {y[t]}"
    if sorted(a.summary) != sorted(b.summary):
        return f"summary keys {sorted(a.summary)}, then {sorted(b.summary)}"
    for key in a.summary:
        x, y = np.asarray(a.summary[key][i]), np.asarray(b.summary[key][j])
        if x.shape != y.shape or not _same(x, y).all():
            return f"seed {a.seeds[i]}: summary '{key}' is {x}, then {y}"
    return None


def _runs_without_error(r: _Runs) -> str | None:
    errors = [play.error for play in r.plays if play.error is not None]
    return f"the agent raised {errors[0]}" if errors else None


def _valid_actions(r: _Runs) -> str | None:
    errors = [p.recorder.action_error for p in r.plays if p.recorder and p.recorder.action_error]
    return errors[0] if errors else None


def _deterministic(r: _Runs) -> str | None:
    for i in range(len(SEEDS)):
        difference = _row_difference(r.batch.played, i, r.again.played, i)
        if difference is not None:
            return f"two runs of the same seeds differ: {difference}"
    return None


def _batch_invariant(r: _Runs) -> str | None:
    difference = _row_difference(r.alone.played, 0, r.batch.played, SEEDS.index(ALONE))
    return None if difference is None else f"alone, then in a batch: {difference}"


def _common_random_numbers(r: _Runs) -> str | None:
    trace, fresh = r.batch.played, r.fresh
    pulled = np.take_along_axis(fresh.mean_rewards, trace.action[:, :, None], axis=2)[:, :, 0]
    world_checks = (
        ("latent path", trace.state, fresh.states),
        ("mean reward of the pulled arm", trace.expected_reward, pulled),
        ("optimal reward", trace.optimal_reward, fresh.optimal_reward()),
    )
    for what, got, expected in world_checks:
        if not _same(got, expected).all():
            return f"the {what} differs from that of a world built for the same seeds"
    if not np.allclose(trace.reward, fresh.realised(trace.action), rtol=0, atol=1e-12):
        return "the reward noise differs from that of a world built for the same seeds"
    for field in fields(fresh.offline_model):
        got = getattr(r.batch.world.offline_model, field.name)
        expected = getattr(fresh.offline_model, field.name)
        if (got is None) != (expected is None) or (
            got is not None and not _same(got, expected).all()
        ):
            return f"the agent modified the offline model's {field.name}"
    return None


def _non_negative_regret(r: _Runs) -> str | None:
    for play in r.plays:
        trace = play.played
        if not np.isfinite(trace.reward).all():
            return "a reward is not finite"
        negative = np.argwhere(trace.regret < 0)
        if len(negative):
            run, t = negative[0]
            return f"seed {trace.seeds[run]}, round {t + 1}: regret {trace.regret[run, t]}"
    return None


def _valid_beliefs(r: _Runs) -> str | None:
    for play in r.plays:
        rounds = play.agent.belief_rounds
        if any(rounds) and not all(rounds):
            first, missing = rounds.index(True) + 1, rounds.index(False) + 1
            return f"a belief in round {first}, none in round {missing}"
        if play.agent.belief_error is not None:
            return play.agent.belief_error
    return None


def _valid_summary(r: _Runs) -> str | None:
    for play in r.plays:
        runs = len(play.played.seeds)
        for key, values in play.played.summary.items():
            shape = np.shape(values)
            if not isinstance(values, np.ndarray) or shape != (runs,):
                kind = type(values).__name__
                return f"summary '{key}' is {kind} of shape {shape}, expected ({runs},)"
    return None


def _declared_memory(r: _Runs) -> str | None:
    env, env_params = r.setting.env, r.setting.params
    try:
        sizes = memory.sizes_of(env, env_params, len(SEEDS))
        memory.env_memory(env, env_params, sizes)
        declared = sum(memory.agent_memory(r.cls, r.params, env_params, sizes).values())
    except memory.Malformed as err:
        return str(err)
    peak, trace = r.again.peak, trace_bytes(sizes)
    if peak is None or peak <= MEMORY_FACTOR * (declared + trace) + MEMORY_SLACK:
        return None
    return (
        f"memory(params, sizes) declares {declared} bytes for {sizes.n_runs} runs of "
        f"{sizes.horizon} rounds, but they allocated {peak} (over {MEMORY_FACTOR} times that "
        f"and the trace's {trace}, plus {MEMORY_SLACK // 2**20} MiB): declare the arrays "
        "that grow, keyed by the config key that makes them grow"
    )


@dataclass(frozen=True)
class Check:
    """One conformance check: ``test`` returns the first failure in a setting, or ``None``."""

    name: str
    meaning: str
    test: Callable[[_Runs], str | None]
    needs_complete_runs: bool = True


CHECKS = (
    Check("runs", "plays every round without raising", _runs_without_error, False),
    Check("actions", "act returns integer arms of shape (R,) in [0, K)", _valid_actions, False),
    Check("determinism", "same seeds, same results, whatever the global RNG", _deterministic),
    Check(
        "batch invariance",
        f"seed {ALONE} alone = seed {ALONE} in a batch of {len(SEEDS)}, bit for bit",
        _batch_invariant,
    ),
    Check(
        "common random numbers",
        "each seed's world is the same for every agent; inputs unchanged",
        _common_random_numbers,
    ),
    Check("regret", "finite rewards, regret >= 0 every round", _non_negative_regret),
    Check(
        "belief",
        "a Belief every round or never; states in [0, S), posteriors sum to 1",
        _valid_beliefs,
    ),
    Check("summary", "summary() values are arrays of shape (R,)", _valid_summary),
    Check(
        "memory",
        "memory(params, sizes) by config key, not far below what a batch allocates",
        _declared_memory,
    ),
)


def _plays(cls: type[Agent], params: Any, s: Setting) -> _Runs:
    """The plays of setting ``s`` (the step ``runs`` of ``run_checks``)."""
    step(f"the check 'runs' on {s.label}")
    return _Runs(
        cls=cls,
        params=params,
        setting=s,
        batch=_play(cls, params, s, SEEDS, key=0),
        again=_play(cls, params, s, SEEDS, key=1, measure=True),
        alone=_play(cls, params, s, (ALONE,), key=2),
        fresh=s.env.build(s.params, np.asarray(SEEDS, dtype=np.int64)),
    )


AGREEMENT_SEEDS = 400
FEW = 7  # seeds played again in a batch of their own: a JAX class's numbers are the seed's


def engines_agree(cls: type[Agent], params: Any, settings: Sequence[Setting]) -> Outcome | None:
    """The default and the JAX engine agree (design §9): on each setting the JAX engine
    covers, the mean final regret of ``AGREEMENT_SEEDS`` seeds of each is within 3
    combined standard errors. ``None`` (no such check) without JAX or when the JAX engine
    runs the agent on none of the settings."""
    from nslb_cli.jax_engine import coverage

    refusals = [coverage.refusal(s.params, params) for s in settings]
    covered = [s for s, refused in zip(settings, refusals, strict=True) if refused is None]
    if not covered:
        broken = [r[1] for r in refusals if r is not None and r[1].startswith("JAX agent ")]
        return Outcome("engines", "FAIL", broken[0]) if broken else None
    from nslb_cli.jax_engine.engine import simulate_seeds as simulate_jax

    seeds = np.arange(AGREEMENT_SEEDS)
    for s in covered:
        step(f"the check 'engines' on {s.label}")
        world = s.env.build(s.params, seeds)
        agent = build_agent(cls, params, world, BatchRNG(seeds))
        ours = simulate(world, agent, progress=False).regret.sum(axis=1)
        try:
            whole = simulate_jax(s.params, params, seeds, len(seeds))
            few = simulate_jax(s.params, params, seeds[:FEW], FEW)
        except Exception as err:
            if stopped_by(err) is not None:
                raise
            contract = isinstance(err, BrokenContract)
            why = (
                f"breaks the agent contract: {err}" if contract else f"raised {describe_error(err)}"
            )
            return Outcome("engines", "FAIL", f"{s.label}: the JAX class {why}")
        if not np.array_equal(few.action, whole.action[:FEW]):
            return Outcome("engines", "FAIL", f"{s.label}: the JAX class plays seeds otherwise "
                           f"in a batch of {FEW} than of {len(seeds)} (it draws or reads "
                           "something besides its keys?)")  # fmt: skip
        theirs = whole.regret.sum(axis=1)
        se = np.sqrt((ours.var(ddof=1) + theirs.var(ddof=1)) / len(seeds))
        if abs(ours.mean() - theirs.mean()) > 3 * se:
            gap = f"{ours.mean():.2f} (numpy) vs {theirs.mean():.2f} (jax)"
            return Outcome(
                "engines", "FAIL", f"{s.label}: final regret {gap}, > 3 SE ({3 * se:.2f})"
            )
    return Outcome(
        "engines",
        "pass",
        f"numpy and jax engines within 3 SE on {AGREEMENT_SEEDS} seeds; the JAX class plays "
        f"{FEW} seeds alike in batches of {FEW} and {AGREEMENT_SEEDS}",
    )


def run_checks(
    cls: type[Agent], params: Any, settings: Sequence[Setting], engines: bool = True
) -> list[Outcome]:
    """Check agent class ``cls`` with ``params`` on every setting: one ``Outcome`` per check
    of ``CHECKS``, then (with ``engines``, when all passed) ``engines_agree``."""
    runs = [_plays(cls, params, s) for s in settings]
    crashed = [r.setting.label for r in runs if _runs_without_error(r) is not None]
    outcomes = []
    for check in CHECKS:
        if crashed and check.needs_complete_runs:
            outcomes.append(Outcome(check.name, "skip", f"not checked: raised in {crashed[0]}"))
            continue
        step(f"the check '{check.name}'")
        failures = [f"{r.setting.label}: {f}" for r in runs if (f := check.test(r)) is not None]
        status, detail = ("FAIL", failures[0]) if failures else ("pass", check.meaning)
        outcomes.append(Outcome(check.name, status, detail))
    passed = engines and all(o.passed for o in outcomes)
    agreed = engines_agree(cls, params, settings) if passed else None
    return outcomes if agreed is None else [*outcomes, agreed]
