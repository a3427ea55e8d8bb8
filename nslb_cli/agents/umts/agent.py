"""umTS: uncertainty-aware model-based Thompson sampling by particle filtering (Algorithm 3).

The reward parameters have the reward model's conjugate prior with the offline model's means
and spreads, each transition row ``phi_s ~ Dir(alpha_s)``, ``S_1 ~ P_1`` (docs/design.md §4.2).
Particle ``i`` carries its last state ``B_{t-1}^i``, its Dirichlet posterior counts and the
conjugate posterior of every state's reward parameters; ``p(R_t | s)`` is the posterior
predictive of the reward in state ``s``.

Update after observing ``(A_t, R_t)`` (the paper's equations (3)-(4)), for every particle:

1. sample ``phi_{B_{t-1}} ~ Dir(counts[B_{t-1}])`` (``P_1`` in the first round; the
   given matrix when transitions are known);
2. ``q(s) = phi_{B_{t-1}, s} · p(R_t | s)``, the reward's posterior predictive above;
3. ``w ← w · sum_s q(s)``: the incremental weight is the predictive likelihood, the ratio
   of equation (4) when ``B_t`` is proposed from its local posterior;
4. ``B_t ~ q / sum_s q(s)``; add the transition ``B_{t-1} -> B_t`` to the counts and
   ``R_t`` to the reward posterior of state ``B_t``;
5. resample (scheme ``resampling``) when ``ESS = 1 / sum_i w_i^2 < resample_threshold · N``.

Acting in round ``t``: every particle draws ``B_t^i ~ P(· | B_{t-1}^i)`` from its
posterior-predictive transition row and samples ``mu^i(a)`` from its reward posterior. Then

* ``mean`` (the paper): ``A_t = argmax_a sum_i w_i mu^i(a)``, belief the particle MAP;
* ``sample``: one particle ``j ~ w``, ``A_t = argmax_a mu^j(a)`` (Thompson sampling), belief
  ``B_t^j``.

``p_true_state`` is ``sum_i w_i P(B_t^i = s | B_{t-1}^i)`` at the true state
(``state_posterior``). With Gaussian rewards ``sum_i w_i mu^i(a)`` is one draw of its exact
Gaussian law. Weights are kept in log space.

Per run and round, draws from the run's own generator in this order: acting (``mean``: ``N``
uniforms; ``sample``: two), ``K`` or ``d`` normals (Bernoulli: a Beta draw per particle of
positive weight and arm of unknown mean); updating, ``N · S`` gammas when transitions are
learnt, ``N`` uniforms, then the resampling scheme's uniforms if the run resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.agents.umts import latent
from nslb_cli.agents.umts.arm_posterior import ArmPosterior
from nslb_cli.agents.umts.linear_posterior import LinearPosterior
from nslb_cli.agents.umts.outcome_posterior import OutcomePosterior
from nslb_cli.agents.umts.resampling import SCHEMES
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes
from nslb_cli.bandit.rewards import Categorical, Gaussian, RewardModel
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check


def reward_posterior(
    model: OfflineModel, n_particles: int, reward_model: RewardModel
) -> ArmPosterior | LinearPosterior:
    """The posterior family that matches the offline model: known outcome laws for
    categorical outcomes, Bayesian linear regression for a linear model (Gaussian rewards
    only), else per-arm posteriors of the reward model.

    Raises:
        ValueError: for a linear model with non-Gaussian rewards, which has no conjugate
            posterior.
    """
    if isinstance(reward_model, Categorical) and model.emissions is not None:
        return OutcomePosterior(model, n_particles, reward_model)
    if not model.linear:
        return ArmPosterior(model, n_particles, reward_model)
    if not isinstance(reward_model, Gaussian):
        raise ValueError("umTS with contexts (Bayesian linear regression) needs Gaussian rewards")
    return LinearPosterior(model, n_particles, reward_model.sigma**2)


@dataclass
class UMTSParams(check.Section):
    name: str = "umts"
    # N, particles per run
    num_particles: int = 100
    # resample when ESS < resample_threshold * N (0: never)
    resample_threshold: float = 0.5
    # systematic | stratified | multinomial
    resampling: str = "systematic"
    # mean: argmax of the weighted mean of particle samples (paper); sample: act on one particle
    # drawn by weight (Thompson sampling)
    action_selection: str = "mean"

    def validate(self) -> None:
        check.positive(self.num_particles, "num_particles")
        check.probability(self.resample_threshold, "resample_threshold")
        check.one_of(self.resampling, SCHEMES, "resampling")
        check.one_of(self.action_selection, ("mean", "sample"), "action_selection")


class UncertainModelThompsonSampling(Agent):
    """umTS (Algorithm 3 of Hong et al., 2021): Thompson sampling over a particle filter of
    latent states, reward parameters and transitions."""

    display_name = "umTS"
    legend_rank = 190
    style = Style("#D55E00", "-", "s")

    Params = UMTSParams
    latent_model = "discrete"
    concurrent = True

    @classmethod
    def memory(cls, params: UMTSParams, sizes: Sizes) -> dict[str, int]:
        """``N`` particles, each with the statistics per state of one agent
        (``Agent.memory``'s default, times ``N``), keyed ``agent.num_particles`` (and the
        contexts' key, with contexts: each particle's regressions grow with it)."""
        per_particle = sum(super().memory(params, sizes).values())
        keys = ["agent.num_particles", *([sizes.features_key] if sizes.n_features else [])]
        return {", ".join(keys): params.num_particles * per_particle}

    def __init__(
        self, params: UMTSParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, N = problem.n_runs, params.num_particles
        self.n_particles = N
        self.log_weights = np.full((R, N), -np.log(N))
        self.previous = np.zeros((R, N), dtype=np.int64)
        self.started = False
        self.counts = (
            None
            if model.concentration is None
            else np.repeat(model.concentration[:, None], N, axis=1).astype(float)
        )
        self.rewards = reward_posterior(model, N, problem.reward_model)
        self.resamples = np.zeros(R, dtype=np.int64)
        self._all_particles = np.repeat(np.arange(N)[None], R, axis=0)
        self._belief: Belief | None = None

    def _filter_state(self) -> latent.Latent:
        """The particles' latent states, as the kernels take them."""
        initial = np.ascontiguousarray(self.model.initial, dtype=float)
        transitions = np.ascontiguousarray(self.model.transitions, dtype=float)
        return self.previous, self.counts, self.started, initial, transitions

    def state_posterior(self) -> np.ndarray:
        """The particle estimate of ``P(S_t = s | H_t)`` before ``R_t``, shape ``(R, S)``
        (the posterior that ``act`` reports)."""
        return latent.state_posterior(self.log_weights, *self._filter_state())

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        generators = self.rng.typed()
        if self.params.action_selection == "mean":
            weights, posterior, states = latent.act_states(
                generators, self.log_weights, *self._filter_state()
            )
            draws = self.rewards.sample_mixture(
                self.rng, self._all_particles, states, weights, contexts
            )
            believed = posterior.argmax(axis=1)
        else:
            posterior, chosen, believed = latent.act_particle(
                generators, self.log_weights, *self._filter_state()
            )
            draws = self.rewards.sample_mixture(
                self.rng, chosen[:, None], believed[:, None], np.ones((len(chosen), 1)), contexts
            )
        self._belief = Belief(state=believed, posterior=posterior)
        return draws.argmax(axis=1)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        self.rewards.step(
            self.rng,
            self.log_weights,
            self._filter_state(),
            contexts,
            actions,
            np.ascontiguousarray(rewards, dtype=float),
            self.params.resample_threshold,
            SCHEMES.index(self.params.resampling),
            self.resamples,
        )
        self.started = True

    def belief(self) -> Belief | None:
        return self._belief

    def summary(self) -> dict[str, np.ndarray]:
        return {"resamples": self.resamples}
