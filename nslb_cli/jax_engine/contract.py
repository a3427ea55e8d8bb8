"""The JAX agent contract: pure functions of one seed that nslb vectorises (docs/design.md §9).

An agent is a class built from its ``Params`` and a ``Setting`` (the problem and what
the offline model leaves unknown) with four pure functions of one seed:

* ``init(model, key) -> state``: the agent's state (a pytree) from the seed's
  ``Model``;
* ``act(state, t, key, truth) -> (state, Decision)``: round ``t``'s arm; ``truth`` is the
  round's ``Truth`` for an agent that declares ``sees_truth`` (the oracle), else ``None``;
* ``update(state, t, action, reward, key) -> state``: after ``R_t``;
* ``summary(state) -> {name: scalar}``: the per-seed statistics of ``seed=K.json``;
* optionally ``detection_count(state) -> scalar``, the detections so far: nslb records the
  rounds in which it rises and scores them against the true changes (design §6);
* optionally ``traced``, a tuple of parameter names that the functions read as traced
  arrays (never as shapes or in Python branches): the jobs of a sweep over them share one
  program (``nslb_cli.jax_engine.sweep``; nslb's own agents only; the model an agent is
  given may hold traced arrays too);
* optionally ``noise_traced = True``: the agent reads ``setting.problem.sigma`` only inside
  ``init``, ``act`` and ``update``, where it is the lane's traced reward noise.

Keys are the seed's agent stream folded with the round (``act`` and ``update`` get two
different keys): an agent draws nothing else. nslb calls these under ``vmap`` and
``lax.scan``; shapes must not depend on values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol

from nslb_cli.bandit.problem import Problem

Array = Any  # a jax.Array (kept loose: this module imports no JAX)


class Model(NamedTuple):
    """One seed's offline model (multi-armed): the point estimate and its priors.

    ``means`` ``(S, K)``, ``mean_sd`` ``(S, K)`` (0 where a mean is known), ``transitions``
    ``(S, S)`` (the point estimate ``phi``), ``concentration`` ``(S, S)`` (the Dirichlet
    prior on ``phi``'s rows; unused when ``Setting.learns_transitions`` is false),
    ``initial`` ``(S,)``."""

    means: Array
    mean_sd: Array
    transitions: Array
    concentration: Array
    initial: Array


class Truth(NamedTuple):
    """What a reference agent sees in round ``t``: ``S_t`` and every arm's true mean ``(K,)``."""

    state: Array
    means: Array


class Decision(NamedTuple):
    """Round ``t``'s arm, the believed state and the distribution behind it ``(S,)`` (an
    agent that reports no belief returns ``-1`` and any ``(S,)`` array)."""

    action: Array
    belief: Array
    posterior: Array


@dataclass(frozen=True)
class Setting:
    """What is static about a job: the problem (one run), and whether the transitions are
    learnt (a Dirichlet prior) or given and the arm means learnt (a prior) or known."""

    problem: Problem
    learns_transitions: bool
    learns_means: bool

    @property
    def gaussian(self) -> bool:
        """Gaussian rewards (else Bernoulli clicks)."""
        return type(self.problem.reward_model).__name__ == "Gaussian"


class JaxAgent(Protocol):
    """The pure agent of one seed (module docstring)."""

    Params: ClassVar[type]
    params: Any
    setting: Setting
    sees_truth: ClassVar[bool]
    reports_belief: ClassVar[bool]

    def __init__(self, params: Any, setting: Setting) -> None: ...

    def init(self, model: Model, key: Array) -> Any: ...

    def act(
        self, state: Any, t: Array, key: Array, truth: Truth | None
    ) -> tuple[Any, Decision]: ...

    def update(self, state: Any, t: Array, action: Array, reward: Array, key: Array) -> Any: ...

    def summary(self, state: Any) -> dict[str, Array]: ...
