"""Hyperparameter studies: ``nslb run hparams_search=<agent>`` tunes an agent with Optuna.

Hydra's Optuna sweeper asks for a trial, launches it as an ordinary job, and reads the
job's return value: the mean final ``run.objective`` over the job's seeds
(:func:`nslb_cli.runner.job.run_job`). Each trial is recorded in the sweep folder as
``.nslb-study/<trial number>.json``::

    {"trial": 7, "overrides": ["agent.tau=124"], "params": {"agent.tau": 124},
     "objective": 92.8, "metric": "final cum_regret", "direction": "minimize"}

which ``nslb plot`` draws. When the study ends, ``best.yaml`` beside them holds the
overrides of the best trial, the tuning seeds left out; ``nslb run <folder>/best.yaml
run.n_seeds=100`` reruns it on the evaluation seeds (:func:`expand_best`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from nslb_cli.common.validators import ConfigError
from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import BEST_FILE, BEST_HEADER, STUDY_FILE

FOLDER = ".nslb-study"
OPTUNA = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
DIRECTIONS = {"cum_regret": "minimize", "cum_reward": "maximize"}
"""What a job can return to a sweeper (``run.objective``), and whether lower is better."""
NOT_REPLAYED = (
    "hparams_search", "name", "run.seed", "run.n_seeds", "run.overwrite", "run.fail_fast",
    "run.progress", "run.batch_size", "run.threads",
)  # fmt: skip
"""Keys of a trial's overrides that ``best.yaml`` leaves out (with every ``hydra.`` key):
the study itself, its folder and tuning seeds (a rerun uses the evaluation seeds in a
folder of its own), and how the study ran, which a rerun chooses anew."""


def direction(objective: str) -> str:
    """``minimize`` or ``maximize``: the Optuna direction of ``run.objective``."""
    return DIRECTIONS.get(objective, "minimize")


def is_study(sweeper: Any) -> bool:
    """Whether the sweeper config ``hydra.sweeper`` is Optuna's."""
    return str(sweeper.get("_target_", "")) == OPTUNA


def start(sweep_dir: Path) -> None:
    """Forget the record of an earlier study in ``sweep_dir``: its trials, its best trial and
    Optuna's summary (a rerun replaces them; the trials' results stay, and a trial of the
    same values reuses them)."""
    shutil.rmtree(sweep_dir / FOLDER, ignore_errors=True)
    for name in (BEST_FILE, STUDY_FILE):
        (sweep_dir / name).unlink(missing_ok=True)


def record_trial(
    sweep_dir: Path,
    number: int,
    overrides: list[str],
    tuned: set[str],
    objective: str,
    value: float | None,
) -> None:
    """Write trial ``number``'s record (module docstring); ``tuned`` are the keys the study
    searches, ``value`` is ``None`` for a failed trial."""
    params = {}
    for item in overrides:
        key, _, text = item.partition("=")
        if key.lstrip("+") in tuned:
            params[key.lstrip("+")] = yaml.safe_load(text)
    record = {
        "trial": number,
        "overrides": overrides,
        "params": params,
        "objective": value,
        "metric": f"final {objective}",
        "direction": direction(objective),
    }
    folder = sweep_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / f"{number}.json", json.dumps(record) + "\n")


def finished_trials(sweep_dir: Path) -> list[dict[str, Any]]:
    """The records of the trials in ``sweep_dir`` that returned an objective (a record that
    cannot be read is left out)."""
    trials = []
    for path in sorted((sweep_dir / FOLDER).glob("*.json")):
        try:
            trials.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return [
        t for t in trials if isinstance(t, dict) and isinstance(t.get("objective"), (int, float))
    ]


def write_best(sweep_dir: Path, agent: str) -> Path | None:
    """Write ``best.yaml`` from the trials recorded in ``sweep_dir``; ``None`` if no trial
    finished."""
    finished = finished_trials(sweep_dir)
    if not finished:
        return None
    sign = -1.0 if finished[0]["direction"] == "maximize" else 1.0
    best = min(finished, key=lambda t: (sign * t["objective"], t["trial"]))
    kept = [o for o in best["overrides"] if not _not_replayed(o)]
    if not any(o.split("=")[0].lstrip("+") == "agent" for o in kept):
        kept.insert(0, f"agent={agent}")
    text = (
        BEST_HEADER
        + f"# The best of {len(finished)} trials ({best['metric']} {best['objective']:.6g}, "
        f"trial {best['trial']}).\n"
        f"# Rerun it on the evaluation seeds: nslb run {sweep_dir / BEST_FILE} run.n_seeds=100\n"
        + yaml.safe_dump({"overrides": kept, "objective": best["objective"]}, sort_keys=False)
    )
    path = sweep_dir / BEST_FILE
    atomic_write_text(path, text)
    return path


def _key(override: str) -> str:
    return override.split("=")[0].lstrip("+~")


def _not_replayed(override: str) -> bool:
    return _key(override) in NOT_REPLAYED or _key(override).startswith("hydra.")


def expand_best(arguments: list[str]) -> list[str]:
    """Replace each argument naming a ``best.yaml`` (any YAML file with an ``overrides``
    list) by its overrides, but for those whose key a later argument sets (which wins)."""
    expanded: list[str] = []
    for where, argument in enumerate(arguments):
        if "=" in argument or not argument.endswith((".yaml", ".yml")):
            expanded.append(argument)
            continue
        later = {_key(a) for a in arguments[where + 1 :] if "=" in a}
        expanded.extend(o for o in _read_best(argument) if _key(o) not in later)
    return expanded


def _read_best(argument: str) -> list[str]:
    """The ``overrides`` list of the YAML file ``argument``; :class:`ConfigError` if none."""
    try:
        content = yaml.safe_load(Path(argument).read_text())
    except FileNotFoundError:
        raise ConfigError(argument, "no such file; give a study's best.yaml") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        reason = " ".join(str(err).split())  # PyYAML's message spans lines
        raise ConfigError(argument, f"cannot be read as YAML ({reason})") from None
    overrides = content.get("overrides") if isinstance(content, dict) else None
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError(argument, "has no 'overrides' list of key=value strings")
    return overrides
