"""The papers whose claims ``nslb plot --paper`` checks, each as docs/design.md §5 states them:
Hong et al. (AISTATS 2021), Russo, Metelli & Restelli (TMLR 2024) and Trella et al.
(RLC 2025), and what Hong et al.'s premise, an offline model learned from logs, predicts of
nslb's ``offline/data_size``. A preset key is ``paper.preset_groups``'s: ``fixed`` for
``paper/fixed``, ``switching_latent`` for ``family/switching_latent``, ``latent_ar/k5`` for the
``k = 5`` group of ``family/latent_ar``, ``data_size/n100`` and ``data_size/known`` for the
groups of ``offline/data_size``."""

from __future__ import annotations

from nslb_cli.plot.reproduction.claims import ALIKE, GAINS, SHRINKS, Claim, Paper, Setting

HONG_BASELINES = {
    "fixed": ("cd_ucb", "cd_ts", "exp4s"),
    "known": ("cd_ucb", "cd_ts", "exp4s"),
    "prior": ("cd_ucb", "cd_ts", "exp4s"),
    "movielens": ("cd_linucb", "cd_lints", "exp4s"),
}
HONG_MODELS = {  # what each figure says of the two model-based samplers
    "fixed": Claim("fixed", "mts", "umts", ALIKE, "cum_regret", "(known model)"),
    "known": Claim("known", "mts", "umts", ALIKE, "cum_regret", "(known model)"),
    "prior": Claim("prior", "umts", "mts"),
    "movielens": Claim("movielens", "umts", "mts"),
}
HONG = Paper(
    stem="reproduction",
    title="Hong et al. (AISTATS 2021), section 5",
    settings={
        "fixed": Setting("2", "cum_regret", 2000, 100),
        "known": Setting("3a", "avg_reward", 2000, 100),
        "prior": Setting("3b", "avg_reward", 2000, 100),
        "movielens": Setting("4", "avg_reward", 2000, 100, "ml-1m"),
    },
    claims=tuple(
        claim
        for preset, bases in HONG_BASELINES.items()
        for claim in [
            *(Claim(preset, a, b) for a in ("mts", "umts") for b in bases),
            HONG_MODELS[preset],
        ]
    ),
    notes="Presets paper/fixed, paper/known, paper/prior, paper/movielens (or their smoke "
    "variants).",
)

RUSSO_BASELINES = (("eps_greedy", ""), ("exp3s", ""), ("umts", "(the particle filter)"))
RUSSO = Paper(
    stem="reproduction-russo2024",
    title="Russo, Metelli & Restelli (TMLR 2024), switching latent bandits",
    settings={
        "switching_latent": Setting("2a", "cum_regret", 10_000, None),
        "movielens_genres": Setting("MovieLens", "cum_regret", 10_000, None, "ml-1m"),
        "switching_latent_estimation": Setting("estimation", "transition_error", None, None),
    },
    claims=(
        *(
            claim
            for preset in ("switching_latent", "movielens_genres")
            for claim in (
                *(Claim(preset, "sl_ec", worse, note=note) for worse, note in RUSSO_BASELINES),
                Claim(preset, "filter_oracle", "sl_ec", note="(the paper's reference)"),
            )
        ),
        Claim(
            "switching_latent_estimation",
            "sl_ec",
            kind=SHRINKS,
            metric="transition_error",
            note="error in estimating the transition matrix",
        ),
    ),
    notes="Presets family/switching_latent (Figure 2a: 3 states, 4 arms, 5 outcomes), "
    "family/movielens_genres and family/switching_latent_estimation. The paper's particle "
    "filter is nslb's umTS, with a flat Dirichlet prior on each row of the transition matrix "
    "where the authors' code builds its prior from the true matrix (docs/design.md §4.10). "
    "The paper measures regret against the filter oracle; a paired difference between two "
    "agents is the same against it or against the state-aware arm. nslb's MovieLens outcome "
    "laws are frequencies of real ratings, flatter than the authors' (docs/design.md §3.6). "
    "The paper's number of runs is not stated here, so seeds are not flagged.",
)

TRELLA_ORDERS = (1, 5, 10)
TRELLA = Paper(
    stem="reproduction-trella2025",
    title="Trella et al. (RLC 2025), non-stationary latent autoregressive bandits, section 6",
    settings={
        f"latent_ar/k{k}": Setting(f"k = {k}", "cum_regret", 200, 100) for k in TRELLA_ORDERS
    },
    claims=tuple(
        Claim(f"latent_ar/k{k}", "larl_etc", worse)
        for k in TRELLA_ORDERS
        for worse in ("ar_ucb", "rexp3")
    ),  # fmt: skip
    notes="Preset family/latent_ar (env=latent_ar/paper_k1, paper_k5, paper_k10). The paper "
    "sums regret over the rounds t ≥ k, nslb over every round; its stationary UCB "
    "(agent=larl agent.s=0) is not in the preset.",
)

FEW, MANY, KNOWN = "data_size/n100", "data_size/n100000", "data_size/known"
OFFLINE = Paper(
    stem="reproduction-offline",
    title="the premise of Hong et al. (AISTATS 2021): offline models learned from logs",
    settings={
        FEW: Setting("10² logged rounds", "cum_regret", 2000, 20),
        MANY: Setting("10⁵ logged rounds", "cum_regret", 2000, 20),
        KNOWN: Setting("known model", "cum_regret", 2000, 20),
    },
    claims=(
        Claim(MANY, "mts", "mts", against=FEW),
        Claim(MANY, "mts", "mts", ALIKE, "cum_regret", against=KNOWN),
        Claim(FEW, "umts", "mts"),
        Claim(FEW, "umts", "mts", GAINS, against=MANY),
    ),
    notes="Preset offline/data_size: the world of paper/known, each seed's model learned by EM "
    "from the rounds its true model logged under uniform play (env.model=learned), mTS on the "
    "fit's point estimate, umTS on its posterior. The same seed is the same world whatever "
    "was logged, so a claim across two amounts of logs pairs by seed. The last claim is a "
    "difference of differences: per seed, umTS's gain over mTS with 10² logged rounds minus "
    "its gain with 10⁵. The preset's settings (T = 2000, 20 seeds) stand for the paper's.",
)

PAPERS = (HONG, RUSSO, TRELLA, OFFLINE)
