"""umTS, the paper's Algorithm 3: Thompson sampling over a particle filter of latent
trajectories, with uncertain reward parameters and transitions (docs/design.md §4.2).

* :mod:`~nslb_cli.agents.umts.agent` — the agent: parameters, acting, the belief;
* :mod:`~nslb_cli.agents.umts.latent` — the latent-state half of the filter: transition
  rows, proposals and weights, resampling (compiled);
* :mod:`~nslb_cli.agents.umts.step` — one round's update, written once for every family of
  reward posterior (compiled);
* :mod:`~nslb_cli.agents.umts.arm_posterior` — conjugate posteriors per arm (multi-armed);
* :mod:`~nslb_cli.agents.umts.linear_posterior` — Bayesian linear regression (contexts);
* :mod:`~nslb_cli.agents.umts.pool` — reward statistics shared between particles;
* :mod:`~nslb_cli.agents.umts.resampling` — the resampling schemes;
* :mod:`~nslb_cli.agents.umts.sampling` — compiled gamma and categorical draws.
"""

from nslb_cli.agents.umts.agent import UMTSParams, UncertainModelThompsonSampling

__all__ = ["UMTSParams", "UncertainModelThompsonSampling"]
