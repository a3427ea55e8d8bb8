"""Hyperparameter studies: ``nslb run hparams_search=<agent>`` tunes an agent with Optuna.

Each trial is recorded as ``.nslb-study/<trial number>.json`` (docs/design.md §5.1).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.core.plugins import Plugins
from omegaconf import MISSING, DictConfig

from nslb_cli.common.errors import ConfigError
from nslb_cli.common.stopping import held
from nslb_cli.runner.config import DIRECTIONS, container
from nslb_cli.runner.inputs import without_later
from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import BEST_FILE, BEST_HEADER, STUDY_FILE, OutputConflict
from nslb_cli.store.results import flatten, read_json

FOLDER = ".nslb-study"
NEXT = ".nslb-study-next"  # the trials of the study running, until it ends
ABOUT = "study.yaml"  # in either: the study's agent, tuned keys and world
WORLD = "nslb_world"  # the user attribute of a study in a storage: its world's key
OPTUNA = "hydra_plugins.nslb_sweep.optuna_sweeper.OptunaSweeper"
STORAGE = ".nslb-optuna.db"  # a study's own Optuna database, in its folder
NOT_REPLAYED = (
    "hparams_search", "study", "name", "run.seed", "run.n_seeds", "run.overwrite", "run.fail_fast",
    "run.progress", "run.batch_size", "run.threads",
)  # fmt: skip
"""Keys of a trial's overrides that ``best.yaml`` leaves out (with every ``hydra.`` key): the
study itself, its folder and tuning seeds, and how the study ran."""


def direction(objective: str) -> str:
    """``minimize`` or ``maximize``: the Optuna direction of ``run.objective``."""
    return DIRECTIONS.get(objective, "minimize")


def is_study(sweeper: Any) -> bool:
    """Whether the sweeper config ``hydra.sweeper`` is Optuna's."""
    return str(sweeper.get("_target_", "")) == OPTUNA


def storage_url(given: str | None, folder: Path) -> str:
    """The database of a study in ``folder``: ``hydra.sweeper.storage`` when ``given``, else
    the study's own SQLite file there, which Optuna's tools open while the study runs."""
    return given if given is not None else f"sqlite:///{Path(folder) / STORAGE}"


# The settings of nslb's Optuna sweeper (hydra_plugins/nslb_sweep/optuna_sweeper.py) and of
# its samplers: Hydra's options hydra/sweeper=optuna and hydra/sweeper/sampler=<name>, stored
# on import here (below the plugin), as every composition of a study needs them.
@dataclass
class Sampler:
    """An Optuna sampler: its class, and the seed that makes a study's trials repeatable."""

    _target_: str = MISSING
    seed: int | None = None


@dataclass
class TPE(Sampler):
    _target_: str = "optuna.samplers.TPESampler"
    n_startup_trials: int = 10  # random trials before the first model
    n_ei_candidates: int = 24
    multivariate: bool | None = None  # Optuna's default (independent), or the joint TPE
    group: bool = False
    constant_liar: bool = True  # running trials count as bad: batches (n_jobs > 1) spread


@dataclass
class Random(Sampler):
    _target_: str = "optuna.samplers.RandomSampler"


@dataclass
class CmaEs(Sampler):
    _target_: str = "optuna.samplers.CmaEsSampler"  # needs the cmaes package ([tune])
    sigma0: float | None = None
    n_startup_trials: int = 1
    popsize: int | None = None
    use_separable_cma: bool = False
    with_margin: bool = False  # for integer and stepped parameters
    lr_adapt: bool = False


@dataclass
class GP(Sampler):
    _target_: str = "optuna.samplers.GPSampler"  # Gaussian-process BO; needs PyTorch
    n_startup_trials: int = 10
    deterministic_objective: bool = False


@dataclass
class NSGAII(Sampler):
    _target_: str = "optuna.samplers.NSGAIISampler"
    population_size: int = 50
    mutation_prob: float | None = None
    crossover_prob: float = 0.9
    swapping_prob: float = 0.5


@dataclass
class QMC(Sampler):
    _target_: str = "optuna.samplers.QMCSampler"
    qmc_type: str = "sobol"
    scramble: bool = False


SAMPLERS = {"tpe": TPE, "random": Random, "cmaes": CmaEs, "gp": GP, "nsgaii": NSGAII, "qmc": QMC}


@dataclass
class OptunaSweeper:
    """``hydra.sweeper`` of a study: the defaults of Hydra's Optuna sweeper, which it replaces."""

    _target_: str = OPTUNA
    defaults: list[Any] = field(default_factory=lambda: [{"sampler": "tpe"}])
    sampler: Sampler = MISSING
    direction: str = "minimize"  # or maximize: follows run.objective (``plan``)
    storage: Any = None  # a database URL; None: the study's own, ``storage_url``
    study_name: str | None = None  # None: a name Optuna makes
    n_trials: int = 20
    n_jobs: int = 2  # trials asked together, launched as one batch
    params: dict[str, str] | None = None  # the search space, in Hydra's override grammar


def _store_options() -> None:
    """Store the options after Hydra's plugin scan: the scan runs an installed Hydra Optuna
    sweeper's module, whose options of the same names would replace these."""
    Plugins.instance()
    store = ConfigStore.instance()
    store.store(group="hydra/sweeper", name="optuna", node=OptunaSweeper, provider="nslb")
    for name, node in SAMPLERS.items():
        store.store(group="hydra/sweeper/sampler", name=name, node=node, provider="nslb")


_store_options()


@dataclass(frozen=True)
class Plan:
    """A study as the command line asks for it, checked (``plan``)."""

    agent: str
    trials: int
    """``hydra.sweeper.n_trials``, at most the number of points of a finite search space."""
    note: str  # why ``trials`` is fewer than asked for, else ""
    storage: str | None
    name: str | None  # hydra.sweeper.study_name
    tuned: list[str]
    world: dict[str, Any]  # the trials' config but the tuned keys, flattened; run.objective
    seeds: tuple[int, int] = (0, -1)  # the first and last tuning seed (run.seed, run.n_seeds)

    @property
    def key(self) -> str:
        """16 hex digits naming the world."""
        text = json.dumps(self.world, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan(base: DictConfig, overrides: list[str]) -> Plan:
    """The study of the composed ``base`` config and the command line's ``overrides``;
    ``ConfigError`` in one line for one that cannot run as asked."""
    sweeper, objective = base.hydra.sweeper, str(base.run.objective)
    for setting in ("n_trials", "n_jobs"):
        value = sweeper.get(setting)
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"hydra.sweeper.{setting}", f"must be an integer >= 1, got {value}")
    given = sweeper.direction
    if given != direction(objective):
        raise ConfigError(
            "hydra.sweeper.direction",
            f"{given} does not follow run.objective={objective}, which a study must "
            f"{direction(objective)}: give hydra.sweeper.direction={direction(objective)}, or "
            "leave it out under hparams_search=… (which follows run.objective)",
        )
    if sweeper.storage is not None and not isinstance(sweeper.storage, str):
        raise ConfigError("hydra.sweeper.storage", "must be a database URL: sqlite:///study.db")
    space = _space(base, overrides)
    size = math.prod(_points(o) for o in space.values())
    trials = int(min(sweeper.n_trials, size))  # more would draw the same points again
    note = (
        f"hydra.sweeper.n_trials: the search space has only {trials} point(s); running "
        f"{trials} trials, not {sweeper.n_trials}"
    ) if trials < sweeper.n_trials else ""  # fmt: skip
    sections = {"env": without_later(container(base.env)), "agent": container(base.agent)}
    world = {k: v for k, v in flatten(sections).items() if k not in space}
    world["run.objective"] = objective
    name = sweeper.study_name
    first = int(base.run.seed)
    return Plan(
        str(base.agent.name), trials, note, sweeper.storage,
        None if name is None else str(name), sorted(space), world,
        (first, first + int(base.run.n_seeds) - 1),
    )  # fmt: skip


def refuse_grid(arguments: list[str]) -> None:
    """Refuse Optuna's grid sampler (``hydra/sweeper/sampler=grid``, which a study's seeded
    sampler cannot take): a grid is a sweep of nslb's, each point once."""
    if any(a.lstrip("+").replace(" ", "") == "hydra/sweeper/sampler=grid" for a in arguments):
        raise ConfigError(
            "hydra/sweeper/sampler",
            f"a study samples its search space ({', '.join(SAMPLERS)}); to run every point "
            "of a grid once, sweep it: nslb run -m agent=cd_ucb 'agent.tau=range(10,2000,step=2)'",
        )


def _space(base: DictConfig, overrides: list[str]) -> dict[str, Override]:
    """The search space: each tuned key's last sweep, from ``hydra.sweeper.params`` and the
    command line; a tuned key the command line also fixes is refused."""
    preset = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    parsed = OverridesParser.create().parse_overrides(preset + overrides)
    space = {o.key_or_group: o for o in parsed if o.is_sweep_override()}
    for override in parsed:
        key, line = override.key_or_group, override.input_line
        if key in space and not override.is_sweep_override():
            raise ConfigError(
                key,
                f"the study tunes {key} ({space[key].input_line}), but '{line}' fixes it, "
                f"so every trial would be the same: drop '{line}', or tune it elsewhere",
            )
    return space


def _points(override: Override) -> float:
    """How many values the Optuna sweeper can draw for a sweep (``inf``: real numbers; ranges
    include their end); one that runs downwards is refused."""
    value = override.value()
    if isinstance(value, ChoiceSweep):
        return len(value.list)
    ends = (value.start, value.stop, value.step) if isinstance(value, RangeSweep) else (
        (value.start, value.end, int(isinstance(value.start, int)))  # int(interval(…)): step 1
        if isinstance(value, IntervalSweep) else (0, 0, 0))  # fmt: skip
    low, high, step = (float(end or 0) for end in ends)
    if high < low or step < 0 or (step == 0 and isinstance(value, RangeSweep)):
        raise ConfigError(
            override.key_or_group,
            f"'{override.input_line}' runs from {ends[0]} down to {ends[1]}: give the low "
            "end first (and a positive step)",
        )
    return math.floor((high - low) / step) + 1 if step else math.inf


def start(folder: Path, study: Plan) -> None:
    """Begin ``study`` in ``folder`` (holding its lock): end a study a kill cut short, refuse a
    record or a storage of another world, open its storage, and make the new study's record."""
    finish(folder)
    recorded = _about(folder / FOLDER)
    if recorded.get("key", study.key) != study.key:
        old, new = recorded.get("world") or {}, study.world
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        raise OutputConflict(
            f"{folder} holds the study of another world (differs in: {', '.join(changed)}); "
            "send this one elsewhere (name=… or hydra.sweep.dir=…), or move that folder away"
        )
    _open_storage(study, folder)
    about = {"agent": study.agent, "tuned": study.tuned, "key": study.key, "world": study.world,
             "seeds": list(study.seeds)}  # fmt: skip
    atomic_write_text(folder / NEXT / ABOUT, yaml.safe_dump(about, sort_keys=False))


@contextlib.contextmanager
def optuna_quiet() -> Iterator[None]:
    """Optuna's notices of the studies it makes and loads off the console, for a while."""
    import optuna

    loud = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(loud)


def _open_storage(study: Plan, folder: Path) -> None:
    """Make the tables and the study in its storage (one process at a time: two that make
    them at once collide), and refuse a study there of another world. In the study's own
    database (no ``hydra.sweeper.storage``) each study begins anew, as its record does."""
    import optuna  # the [tune] extra

    url, own = storage_url(study.storage, folder), study.storage is None
    try:
        if own:
            Path(folder).mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(Path(tempfile.gettempdir()) / "nslb-study-storage.lock"), mode=0o666)
        with lock, optuna_quiet():
            storage = optuna.storages.RDBStorage(url)
            if study.name is None:
                return  # Optuna names each run's study anew
            if own and study.name in {s.study_name for s in storage.get_all_studies()}:
                optuna.delete_study(study_name=study.name, storage=storage)
            kept = optuna.create_study(
                storage=storage,
                study_name=study.name,
                direction=optuna.study.StudyDirection[
                    direction(study.world["run.objective"]).upper()
                ],
                load_if_exists=True,
            )
            if WORLD not in kept.user_attrs and not kept.trials:
                kept.set_user_attr(WORLD, study.key)
    except Exception as err:  # SQLAlchemy's errors, a missing driver, an unknown dialect
        reason = " ".join(str(getattr(err, "orig", None) or err.__cause__ or err).split())
        raise ConfigError(
            "hydra.sweeper.storage",
            f"cannot open {url} ({reason.split(' [SQL:')[0]}); give a database "
            "URL Optuna can write, such as sqlite:///study.db",
        ) from None
    if kept.user_attrs.get(WORLD) != study.key:
        raise ConfigError(
            "hydra.sweeper.storage",
            f"study '{study.name}' in {url} holds trials of another world (or of "
            "one not recorded), which its sampler would learn from: give this study another "
            "hydra.sweeper.study_name",
        )


def record_trial(
    sweep_dir: Path,
    number: int,
    overrides: list[str],
    tuned: set[str],
    objective: str,
    value: float | None,
) -> None:
    """Write trial ``number``'s record into the running study's; ``tuned``: the keys of the
    sweeper's ``params``; ``value`` is ``None`` for a failed trial."""
    tuned = tuned | set(_about(sweep_dir / NEXT).get("tuned", []))
    pairs = (item.partition("=") for item in overrides)
    params = {k.lstrip("+"): yaml.safe_load(v) for k, _, v in pairs if k.lstrip("+") in tuned}
    record = {
        "trial": number,
        "overrides": overrides,
        "params": params,
        "objective": value,
        "metric": f"final {objective}",
        "direction": direction(objective),
    }
    atomic_write_text(sweep_dir / NEXT / f"{number}.json", json.dumps(record) + "\n")


def _about(records: Path) -> dict[str, Any]:
    """A study record's ``study.yaml``; empty when there is none (or it cannot be read)."""
    try:
        about = yaml.safe_load((records / ABOUT).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return about if isinstance(about, dict) else {}


def finished_trials(records: Path) -> list[dict[str, Any]]:
    """The records in the folder ``records`` of the trials that returned an objective (a
    record that cannot be read is left out)."""
    trials = [read_json(path) for path in sorted(records.glob("*.json"))]
    return [
        t for t in trials if isinstance(t, dict) and isinstance(t.get("objective"), (int, float))
    ]


def finish(folder: Path) -> str:
    """End the study running in ``folder``: with finished trials, its record replaces the previous
    one in one step a kill cannot leave half-done; else the previous stays whole. Say which."""
    fresh = folder / NEXT
    trials = finished_trials(fresh)
    if trials:
        best = _best(trials)
        atomic_write_text(fresh / BEST_FILE, _best_text(folder, best, len(trials), _about(fresh)))
        atomic_write_text(fresh / STUDY_FILE, _results_text(best))
        with held():  # Ctrl-C waits; a kill leaves the new record to the next study's start
            for name in (BEST_FILE, STUDY_FILE):  # its two files, then its trials
                os.replace(fresh / name, folder / name)
            shutil.rmtree(folder / FOLDER, ignore_errors=True)
            os.replace(fresh, folder / FOLDER)
        return f"the best trial's overrides are in {folder / BEST_FILE}"
    shutil.rmtree(fresh, ignore_errors=True)
    kept = finished_trials(folder / FOLDER)
    if not kept:
        return "no trial of the study finished; nothing to choose from"
    # the results file, rewritten from the kept trials: it names best.yaml's trial, whatever
    # wrote it last (Hydra's Optuna sweeper, before nslb's own, wrote it from every stored trial)
    atomic_write_text(folder / STUDY_FILE, _results_text(_best(kept)))
    return f"no trial of the study finished; the previous study's {folder / BEST_FILE} stays"


def _best(trials: list[dict[str, Any]]) -> dict[str, Any]:
    sign = -1.0 if trials[0]["direction"] == "maximize" else 1.0
    return min(trials, key=lambda t: (sign * t["objective"], t["trial"]))


def _best_text(folder: Path, best: dict[str, Any], count: int, about: dict[str, Any]) -> str:
    """``best.yaml``: the best trial's overrides, but those not replayed; its agent named."""
    kept = [o for o in best["overrides"] if not _not_replayed(o)]
    if about.get("agent") and not any(_key(o) == "agent" for o in kept):
        kept.insert(0, f"agent={about['agent']}")
    return (
        BEST_HEADER + f"# The best of {count} trials ({best['metric']} {best['objective']:.6g}, "
        f"trial {best['trial']}).\n"
        f"# Rerun it on the evaluation seeds: nslb run {shlex.quote(str(folder / BEST_FILE))} "
        "run.n_seeds=100\n"
        + yaml.safe_dump(
            {"overrides": kept, "objective": best["objective"], "tuning_seeds": about.get("seeds")},
            sort_keys=False,
        )
    )


def _results_text(best: dict[str, Any]) -> str:
    """``optimization_results.yaml`` of the trial ``best``: the keys and layout of the file
    Hydra's Optuna sweeper wrote, which nslb's sweeper leaves to ``finish``."""
    results = {"name": "optuna", "best_params": best["params"], "best_value": best["objective"]}
    return yaml.safe_dump(results, sort_keys=False)


def _key(override: str) -> str:
    return override.split("=")[0].lstrip("+~")


def _not_replayed(override: str) -> bool:
    return _key(override) in NOT_REPLAYED or _key(override).startswith("hydra.")


def expand_best(arguments: list[str]) -> list[str]:
    """Replace each argument naming a ``best.yaml`` by its overrides, but for keys a later
    argument sets; beside a later sweep of agents, the tuned values are an option (``_beside``).
    """
    arguments, expanded = list(arguments), []
    for where, argument in enumerate(arguments):
        if not _names_a_file(argument):
            expanded.append(arguments[where])  # (a sweep of agents may have been rewritten)
            continue
        overrides = _beside(_read_best(argument)["overrides"], arguments, where)
        later = {_key(a) for a in arguments[where + 1 :] if "=" in a}
        expanded.extend(o for o in overrides if _key(o) not in later)
    return expanded


def _beside(overrides: list[str], arguments: list[str], where: int) -> list[str]:
    """The best file's ``overrides`` (at ``arguments[where]``) to add; when a later argument
    sweeps ``agent`` over the tuned agent and others, that argument chooses the tuned
    option instead (rewritten in place), and the agent's overrides are left out."""
    agent = next((o.split("=", 1)[1] for o in overrides if _key(o) == "agent"), None)
    for index in range(where + 1, len(arguments)):
        key, _, listed = arguments[index].partition("=")
        values = listed.split(",")
        if key == "agent" and len(values) > 1 and agent in values:
            tuned = [o for o in overrides if _key(o).startswith("agent.")]
            option = f"{agent}_tuned"  # the agent option of the agent with the tuned values
            pairs = (o.split("=", 1) for o in tuned)
            node = {"name": agent} | {k.split(".", 1)[1]: yaml.safe_load(v) for k, v in pairs}
            ConfigStore.instance().store(group="agent", name=option, node=node)
            arguments[index] = "agent=" + ",".join(option if v == agent else v for v in values)
            return [o for o in overrides if _key(o) != "agent" and o not in tuned]
    return overrides


def refuse_tuning_seeds(arguments: list[str], first: int, last: int) -> None:
    """Refuse to evaluate a ``best.yaml`` among ``arguments`` on seeds ``first``…``last``
    that overlap the seeds it was tuned on (its ``tuning_seeds``): the minimum of noisy
    trials is biased low on them. ``ConfigError`` in one line."""
    for argument in filter(_names_a_file, arguments):
        tuned = _read_best(argument).get("tuning_seeds")
        if isinstance(tuned, list) and len(tuned) == 2 and first <= tuned[1] and tuned[0] <= last:
            raise ConfigError(
                "run.seed",
                f"seeds {first}–{last} overlap the seeds {tuned[0]}–{tuned[1]} that {argument} "
                "was tuned on: evaluate on others (the default run.seed=0, run.n_seeds=100)",
            )


def _names_a_file(argument: str) -> bool:
    """Whether a command-line argument names a best file: a ``.yaml`` path, or a file (a
    path with a folder or a suffix: ``best.txt``; an ``=`` in it, as Hydra's folders have)."""
    if "=" not in argument and argument.endswith((".yaml", ".yml")):
        return True
    try:
        return ("/" in argument or bool(Path(argument).suffix)) and Path(argument).is_file()
    except OSError:  # too long for a path: an override
        return False


def _read_best(argument: str) -> dict[str, Any]:
    """The YAML file ``argument``, with its ``overrides`` list; ``ConfigError`` if none."""
    try:
        content = yaml.safe_load(Path(argument).read_text())
    except FileNotFoundError:
        raise ConfigError(argument, "no such file; give a study's best.yaml") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        reason = " ".join(str(err).split())  # PyYAML's message spans lines
        raise ConfigError(argument, f"cannot be read as YAML ({reason})") from None
    overrides = content.get("overrides") if isinstance(content, dict) else None
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError(
            argument,
            "has no 'overrides' list of key=value strings; give a study's best.yaml",
        )
    return content
