"""``reproduction.md``: each claim of the paper's section 5, its paired difference, whether it
held."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.plot import reproduction
from tests.helpers.results_tree import fake_config, write_fake_run

FIXED = {  # final cumulative regret of seeds 0-3 in paper/fixed's group
    "mts": [10.0, 12.0, 11.0, 13.0],
    "cd_ucb": [20.0, 22.0, 19.0, 25.0],  # mTS lower by 10, 10, 8, 12
    "cd_ts": [11.0, 11.0, 12.0, 12.0],  # by -1, 1, -1, 1
    "umts": [30.0, 31.0, 29.0, 30.0],  # higher than CD-UCB by 10, 9, 10, 5
}


def _final() -> pd.DataFrame:
    rows = [
        {"group": "g", "agent": agent, "agent.name": agent, "seed": seed, "t": 500,
         "cum_regret": value}
        for agent, values in FIXED.items()
        for seed, value in enumerate(values)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_each_claim_is_checked_by_its_paired_difference() -> None:
    claims = reproduction.check(_final(), {"fixed": "g"})
    assert len(claims) == 28 and set(claims["figure"]) == {"2", "3a", "3b", "4"}
    assert set(claims.loc[claims["figure"] != "2", "verdict"]) == {"not run"}
    table = claims[claims["figure"] == "2"].set_index("claim")
    held = table.loc["mTS beats CD-UCB"]
    assert held["verdict"] == "held" and held["n_pairs"] == 4 and held["round"] == 500
    assert held["diff_mean"] == 10.0  # sd of 0, 0, -2, 2 is sqrt(8/3); SE = sd / 2
    assert held["diff_se"] == pytest.approx(np.sqrt(8 / 3) / 2)
    tie = table.loc["mTS beats CD-TS"]
    assert tie["verdict"] == "not significant" and tie["diff_mean"] == 0.0
    assert table.loc["umTS beats CD-UCB", "verdict"] == "reversed"
    assert table.loc["umTS beats CD-UCB", "diff_mean"] == -8.5
    alike = table.loc["mTS and umTS perform alike (known model)"]  # 18.5 ± 0.65
    assert alike["verdict"] == "not significant" and alike["diff_mean"] == 18.5
    assert table.loc["mTS beats Exp4.S", "verdict"] == "not run"


def test_plot_paper_writes_the_reproduction_report_and_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"name": "synthetic", "dynamics": "fixed", "model": "known", "horizon": 30}
    for agent, level in (("mts", 0.1), ("umts", 0.1), ("cd_ucb", 0.6)):
        config = fake_config("paper/fixed", env, agent)
        write_fake_run(tmp_path / "paper/fixed" / agent, config, list(range(5)), level)
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png", "--paper"])
    printed = capsys.readouterr().out
    text = (tmp_path / "figs/reproduction.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| 2") or line.startswith("| 3")]
    assert len(rows) == 21, "every claim of figures 2 and 3, run or not"
    assert "| 2 | mTS beats CD-UCB | cum_regret | 30 | 5 |" in text and "| held |" in text
    assert "| 3a | mTS beats CD-UCB | avg_reward | | | | not run |" in text
    assert text.strip().splitlines()[-1] in printed
    csv = pd.read_csv(tmp_path / "figs/reproduction.csv")
    assert list(csv.columns) == list(reproduction.COLUMNS) and len(csv) == 28
