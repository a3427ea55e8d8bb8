"""nslb's plugin contract: agents and environments from other packages.

Import what a plugin needs from here (``from nslb_cli.api import Agent, ...``). The names in
``__all__`` and the rules below are stable: changing them is a breaking change of nslb.
Every other module of ``nslb_cli`` is internal and may change without notice.

Registering
===========
A package declares entry points in its ``pyproject.toml``; once it is installed in nslb's
environment, ``agent=my_agent`` works in every command (``nslb list``, ``run``, sweeps,
``check``, ``plot``), exactly as for nslb's own agents, which are declared the same way:

    [project.entry-points."nslb.agents"]
    my_agent = "my_pkg.agents:MyAgent"
    [project.entry-points."nslb.envs"]
    my_env = "my_pkg.envs:MyEnv"

The class's ``Params`` is a dataclass: a field ``name`` whose default is the entry point's
name, a default for every other field (they are the config group option:
``nslb run agent=my_agent agent.epsilon=0.2``), and a ``__post_init__`` that rejects bad
values with ``ConfigError`` (the helpers in ``check`` name the key and the range).
nslb reports unknown keys and wrong types itself, in the same one-line errors as for its own.

A plugin that fails to import, or breaks these rules, is reported in one line naming it and
is left out; the other agents work. A name declared by two packages is refused.

Agents
======
``class MyAgent(Agent)`` with ``Params = MyParams``. nslb builds one object per batch of
``R`` runs (seeds): ``MyAgent(params, problem, model, rng)``, where

* ``params``: the validated ``Params`` instance;
* ``problem``: ``Problem`` — ``n_arms`` (K), ``n_states`` (S), ``horizon`` (n),
  ``n_runs`` (R), ``reward_model`` (``RewardModel``: Gaussian or Bernoulli rewards; its
  methods give the likelihood ``log_likelihood(r, mu)``, the conjugate prior of a mean from
  the model's ``means`` and ``mean_sd`` (``prior``), ``update``, the posterior predictive
  and posterior draws, so an agent written against them handles every reward model) and
  ``sigma``, the rewards' sub-Gaussian scale (the Gaussian noise's standard deviation, 1/2
  for Bernoulli rewards);
* ``model``: ``OfflineModel`` — what the environment tells agents: ``means`` ``(R, S,
  K)`` (linear models: ``(R, S, d)``), ``mean_sd``, ``transitions`` ``(R, S, S)``,
  ``concentration`` (Dirichlet prior or ``None``), ``initial`` ``(R, S)``, ``covariance``
  (linear only), and ``expected_rewards(contexts)`` ``(R, S, K)``. Model-free agents ignore
  it;
* ``rng``: ``BatchRNG`` — the agent's own random streams, one generator per run:
  ``random(shape)``, ``normal(shape)``, ``integers(high, shape)`` return ``(R, *shape)``
  arrays, ``beta(a, b)`` one draw per entry of ``(R, …)`` arrays; ``generators`` is the list
  of the runs' ``numpy.random.Generator``.

Each round ``t`` (0-based) nslb calls, in this order:

* ``act(t, contexts) -> actions``: an integer array ``(R,)`` of arms in ``[0, K)``.
  ``contexts`` is ``None`` (multi-armed) or ``(R, K, d)``, the features of this round's arms;
* ``belief() -> Belief | None``: the belief behind that ``act`` — ``Belief`` with
  ``state`` ``(R,)`` in ``[0, S)`` and ``posterior`` ``(R, S)``, rows summing to one — or
  ``None`` for agents without one (then in every round). Optional: the default is ``None``;
* ``update(t, contexts, actions, rewards)``: the rewards ``(R,)`` of those actions.

After the last round, ``summary() -> dict[str, array (R,)]`` (optional; default empty):
per-run statistics written to ``seed=K.json`` beside the CSVs. An agent that restarts or
detects changes may define ``detection_counts() -> array (R,)`` (optional; default ``None``),
its detections so far per run: nslb reads it after every ``update`` and records the rounds of
the detections and how they match the true changes (false alarms, delays) in ``seed=K.json``.

The rules (``nslb check agent=NAME`` tests them; see ``nslb_cli.runner.conformance``):

1. Batched, runs independent: arrays carry the runs axis first, and what run ``r`` does
   depends only on its own observations and its own generator. Seed ``k`` must give the
   same numbers alone or in any batch: draw the same amount per run whatever the others do,
   and do not mix runs in BLAS calls (``@``, ``einsum`` over a batch can round differently
   with its size) — use elementwise products and sums.
2. Randomness only from ``rng``: never ``np.random.*``, ``random`` or the clock.
3. The agent sees the problem, the model, the contexts and its own rewards, nothing else
   of the world, and modifies none of its inputs in place. (A reference for plots, like
   the oracle, may declare ``sees_truth = True``: it is then also given ``truth=``, a
   ``Truth``.)

An agent that learns per arm (arm ``a`` must be the same item every round) declares
``fixed_arms = True``: nslb then refuses it, in one line, on environments whose arms are
different items every round (``contextual``, e.g. MovieLens).

How reports show it (``nslb plot``), all optional: ``display_name`` (its name in legends and
labels; default: the entry point's name), ``legend_rank`` (its place in legends, lower first;
nslb's own take 10 to 240; default: after those, by name) and ``style``, a ``Style``
(colour, matplotlib line style, marker: ``Style("#1B9E77", "--", "o")``; default: the
report's next free colour, line style and marker):

    class MyAgent(Agent):
        Params = MyParams
        display_name = "My-UCB"
        style = Style("#1B9E77", "--", "o")

Memory: before anything is built, nslb estimates what a batch needs and refuses a job whose
batch cannot fit in the machine's memory, in one line naming the config key to lower. An
agent states its part with the classmethod ``memory(params, sizes) -> dict[str, int]``: the
bytes it keeps for a batch, each term keyed by the config key whose value makes it grow —
one of its own (``"agent.window"``), the environment's (``"env.n_arms"``) or
``"run.batch_size"``; several joined by ``", "`` when the term grows with each. ``sizes`` is
a ``Sizes``: ``n_runs`` (R), ``horizon``, ``n_arms``, ``n_states``, ``n_features``
(the contexts' dimension d, 0 without contexts) and ``features_key``, the key that sets d.
The default, ``Agent.memory``, counts statistics per arm and state, ``8 R S (2K + S)``
bytes keyed ``"env.n_states, env.n_arms"`` (with contexts a regression per state,
``8 R S (d^2 + d)`` keyed ``features_key``); override it when your arrays grow with your
own parameters:

    @classmethod
    def memory(cls, params, sizes):
        return {"agent.window, env.n_arms": 8 * sizes.n_runs * params.window * sizes.n_arms}

A lower bound will do (the arrays that grow, not temporaries). ``nslb check`` fails a
declaration with other keys or values than integers ``>= 0``, or far below what a short
batch allocates; ``nslb run`` refuses a job whose agent's declaration raises or is malformed.

Environments
============
``class MyEnv`` with ``Params = MyEnvParams`` (same rules as an agent's, plus the fields
``n_arms``, ``n_states`` and ``horizon``), ``contextual`` (``True`` when each round's arms
are different items with features, ``False`` for fixed arms) and
``build(params, seeds) -> World`` (a static or class method), where the realisation of seed
``k`` depends only on ``params`` and ``k`` (common random numbers): draw from
``generator(k, Stream.PARAMETERS)``, ``Stream.PATH``, ``Stream.NOISE``, ``Stream.CONTEXTS``,
and draw the reward noise per round, not per arm (``RewardModel.noise``; the world's
``problem.reward_model.realise`` turns it into the pulled arm's reward). See ``World``
for its arrays.

Input files: an environment that reads files names the ``Params`` fields holding their paths
in a class attribute ``files`` (a tuple; nslb's ``piecewise`` declares ``files =
("table",)``). Their values are recorded in one spelling (``./a.csv`` as ``a.csv``, ``data/``
as ``data``), and for each that names a file, its content's SHA-256 and the validated
``Params`` (what ``__post_init__`` read from it) join the run's config: an edited file is
another config, refused in the folder of the old one. A field naming a folder is only
normalised: its contents are the environment's to record.

Memory (see Agents), with two optional static or class methods. nslb counts a batch's
``World`` arrays itself from its ``Sizes``: by default the ``Params``' horizon,
arms and states, without contexts. An environment with contexts gives them with
``sizes(params, n_runs) -> Sizes``, naming the contexts' dimension and the key that sets it
(MovieLens: ``Sizes(n_runs, p.horizon, p.n_arms, p.n_states, p.rank, "env.rank")``). What
its batch needs beyond the world's arrays it declares with ``memory(params, sizes) ->
dict[str, int]``, keyed by its own config keys (``env.KEY``) or ``run.batch_size``.

JAX agents
==========
An agent can also run on the JAX engine (``run.engine=jax``, design §9) under the same name:
declare a second class in the group ``nslb.jax_agents`` (where nslb declares its own):

    [project.entry-points."nslb.jax_agents"]
    my_agent = "my_pkg.jax_agents:MyJaxAgent"

It is a frozen dataclass of ``params`` (the same validated ``Params``) and ``setting``
(``JaxSetting``: ``problem`` of one run, ``learns_transitions``, ``learns_means``),
with class attributes ``Params``, ``sees_truth`` and ``reports_belief``, and four pure
functions of ONE seed, which nslb vectorises over seeds and compiles with the world:

* ``init(model, key) -> state``: ``model`` is ``JaxModel`` (``means`` ``(S, K)``,
  ``mean_sd``, ``transitions``, ``concentration``, ``initial``); ``state`` any pytree;
* ``act(state, t, key, truth) -> (state, Decision)``: ``Decision`` holds the arm, the
  believed state and its distribution ``(S,)`` (``-1`` and any ``(S,)`` array without a
  belief); ``truth`` is a ``JaxTruth`` for an agent that ``sees_truth``, else ``None``;
* ``update(state, t, action, reward, key) -> state``;
* ``summary(state) -> {name: scalar}``, written to ``seed=K.json``.

Draw only from the keys given (``jax.random``); shapes may not depend on values. ``nslb
check`` compares the two classes' regret (3 standard errors on 400 seeds).
``examples/epsilon_greedy`` has both.

Results on disk, as pandas frames for notebooks, are ``nslb_cli.load_results`` and
``nslb_cli.summarise`` (``nslb_cli.plot.notebook``): they are not part of this contract.
"""

from __future__ import annotations

from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes, Truth
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import BatchRNG, Stream, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.jax_engine.contract import Decision, JaxAgent
from nslb_cli.jax_engine.contract import Model as JaxModel
from nslb_cli.jax_engine.contract import Setting as JaxSetting
from nslb_cli.jax_engine.contract import Truth as JaxTruth

__all__ = [
    "Agent",
    "BatchRNG",
    "Belief",
    "Bernoulli",
    "ConfigError",
    "Decision",
    "Gaussian",
    "JaxAgent",
    "JaxModel",
    "JaxSetting",
    "JaxTruth",
    "OfflineModel",
    "Problem",
    "RewardModel",
    "Sizes",
    "Stream",
    "Style",
    "Truth",
    "World",
    "check",
    "generator",
]
