# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # A small experiment, from a notebook
#
# mTS against CD-TS on the paper's known-model Markov scenario (Hong et al., 2021, Figure 3a),
# shortened to 400 rounds and 5 seeds so that it runs in seconds. The cells run the `nslb`
# command, read its results with `nslb_cli.load_results`, and draw them with seaborn in nslb's
# colours. Open this file as a notebook with jupytext (`jupytext --to notebook notebook.py`),
# or run it as a script: `python examples/notebook.py`.

# %%
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # draw to files; a notebook shows the figure inline anyway
import seaborn as sns

import nslb_cli

folder = Path("outputs/example")
nslb = Path(sys.executable).with_name("nslb")  # the console script of this environment

# %% [markdown]
# Run the experiment: a multirun over two agents, results under `outputs/example`.

# %%
subprocess.run(
    [nslb, "run", "-m", "experiment=paper/known", "agent=mts,cd_ts", "run.n_seeds=5",
     "env.horizon=400", f"hydra.sweep.dir={folder}"],
    check=True,
)  # fmt: skip

# %% [markdown]
# Load every seed's rounds into one tidy frame, and make the summary `nslb plot` would write:
# final values, mean ± SE over seeds, and the paired difference to mTS.

# %%
frame = nslb_cli.load_results(folder)
table = nslb_cli.summarise(frame, reference="mts")
print(table[["agent", "n_seeds", "cum_regret_mean", "cum_regret_se", "diff_cum_regret_mean"]])

# %% [markdown]
# Cumulative regret per round, mean ± one standard error over seeds (the bands of nslb's
# figures), in nslb's colour of each agent.

# %%
axes = sns.lineplot(
    frame, x="t", y="cum_regret", hue="agent", errorbar="se",
    palette=nslb_cli.palette(frame["agent"].unique()),
)  # fmt: skip
axes.set(xlabel="round", ylabel="cumulative regret")
axes.figure.savefig(folder / "cum_regret.png", dpi=120, bbox_inches="tight")
