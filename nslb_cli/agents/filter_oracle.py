"""The filter oracle of the switching-latent papers (Russo, Metelli & Restelli, 2024): the
agent that knows the true model, keeps the exact belief and plays greedily under it.

The belief ``P_t`` is mTS's exact filter (``nslb_cli.agents.mts``, the paper's equation (1))
with the true transitions and reward laws; each round it pulls

    A_t = argmax_a sum_s P_t(s) mu(a, X_t, s)

(the first such arm). The regret of an agent minus the filter oracle's, paired by seed, is
the regret these papers report. The reported belief is ``argmax_s P_t(s)``. It is refused
where the agents' model is not the world's (``nslb_cli.runner.config.pairing_refusal``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Belief, Style
from nslb_cli.agents.mts import ModelThompsonSampling
from nslb_cli.common import validators as check


@dataclass
class FilterOracleParams(check.Section):
    name: str = "filter_oracle"


class FilterOracle(ModelThompsonSampling):
    """The exact belief of the true model and the greedy arm under it (module docstring)."""

    display_name = "Filter oracle"
    legend_rank = 225
    style = Style("#404040", (0, (3, 1)), "x")

    Params = FilterOracleParams  # type: ignore[assignment]  # a class of its own
    needs_true_model = True

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        means = self.predicted(t, contexts)  # (R, S, K)
        belief = self.predictive  # (R, S)
        self._belief = Belief(state=belief.argmax(axis=1), posterior=belief)
        return np.einsum("rs,rsk->rk", belief, means).argmax(axis=1)
