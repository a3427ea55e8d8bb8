"""umTS, the paper's Algorithm 3: Thompson sampling over a particle filter of latent
trajectories, with uncertain reward parameters and transitions (docs/design.md §4.2).

* ``agent`` — the agent: parameters, acting, the belief;
* ``latent`` — the latent-state half of the filter: transition
  rows, proposals and weights, resampling (compiled);
* ``step`` — one round's update, written once for every family of
  reward posterior (compiled);
* ``arm_posterior`` — conjugate posteriors per arm (multi-armed);
* ``linear_posterior`` — Bayesian linear regression (contexts);
* ``pool`` — reward statistics shared between particles;
* ``resampling`` — the resampling schemes;
* ``sampling`` — compiled gamma and categorical draws.
"""

from nslb_cli.agents.umts.agent import UMTSParams, UncertainModelThompsonSampling

__all__ = ["UMTSParams", "UncertainModelThompsonSampling"]
