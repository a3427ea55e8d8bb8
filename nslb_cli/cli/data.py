"""``nslb data``: prepare the MovieLens data ahead of a run, and show where it is cached.

Settings are given as in ``nslb run``, as ``env.key=value`` overrides of ``env=movielens``:

    nslb data prepare env.data_dir=~/data/ml-100k env.min_user_ratings=100 env.min_item_ratings=100
    nslb data prepare --json env.release=ml-1m      # the diagnostics as JSON
    nslb data path                                  # the cache folder
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from nslb_cli.common.errors import ConfigError
from nslb_cli.data import releases
from nslb_cli.envs.movielens import MovieLensParams, describe, load
from nslb_cli.runner import compose
from nslb_cli.runner.overrides import expand_home

USAGE = """usage: nslb data <command> [--json] [env.key=value ...]

commands:
  prepare   download (if needed), filter, split, factorise and cluster; cache the result and
            print its diagnostics (--json: as JSON)
  path      print the cache folder (env.cache_dir, else $NSLB_CACHE, else the user cache)

Settings are those of env=movielens (`nslb run env=movielens --cfg job` lists them), e.g.
  nslb data prepare env.data_dir=~/data/ml-100k env.min_user_ratings=100 env.min_item_ratings=100
"""
COMMANDS = ("prepare", "path")


def main(arguments: Sequence[str]) -> None:
    """Run ``nslb data <arguments>``; raises ``ConfigError`` for bad input."""
    if not arguments or any(a in ("-h", "--help", "help") for a in arguments):
        print(USAGE, end="")
        return
    command, rest = arguments[0], list(arguments[1:])
    if command not in COMMANDS:
        raise ConfigError("data", f"unknown command '{command}'; use one of: {', '.join(COMMANDS)}")
    as_json = "--json" in rest
    params = settings([a for a in rest if a != "--json"])
    if command == "path":
        print(releases.cache_root(params.cache_dir))
    else:
        report = prepare(params)
        print(json.dumps(report, indent=1) if as_json else summary(report))


def settings(overrides: list[str]) -> MovieLensParams:
    """``env=movielens`` with ``overrides`` (``env.key=value`` only), validated."""
    overrides = expand_home(overrides)
    for item in overrides:
        if not item.startswith("env.") or "=" not in item:
            raise ConfigError("data", f"'{item}': expected env.key=value settings of env=movielens")
    return compose.load(["env=movielens", *overrides]).env


def prepare(params: MovieLensParams) -> dict:
    """Build or load the prepared data; its diagnostics and where it is."""
    start = time.perf_counter()
    report = describe(params)
    loaded = load(params)  # memoised: the data describe() just loaded
    return {
        **report,
        "cache": {
            "file": str(loaded.path),
            "hit": loaded.hit,
            "seconds": round(time.perf_counter() - start, 3),
        },
    }


def summary(report: dict) -> str:
    """The diagnostics as a few aligned lines."""
    raw, kept, s = report["raw"], report["filtered"], report["settings"]
    rmse, clusters, cache = report["rmse"], report["clusters"], report["cache"]
    scale, penalty, distance = report["scale"], report["penalty"], report["squared_distance"]
    genres = ", ".join(f"{name} {count}" for name, count in report["genres"].items() if count)
    how = "read" if cache["hit"] else "built"
    lines = {
        "source": f"{report['source']['folder']} ({report['source']['format']} format)",
        "cache": f"{cache['file']} ({how} in {cache['seconds']:.2f} s)",
        "ratings": (
            f"{raw['ratings']} by {raw['users']} users on {raw['movies']} movies; kept "
            f"{kept['ratings']} by {kept['users']} users on {kept['movies']} movies "
            f"(users >= {s['min_user_ratings']}, movies >= {s['min_item_ratings']} ratings; "
            f"fewest kept: {kept['fewest_ratings_of_a_user']} of a user, "
            f"{kept['fewest_ratings_of_a_movie']} of a movie)"
        ),
        "scale": f"ratings from {scale['min']:g} to {scale['max']:g} in steps of {scale['step']:g}",
        "split": f"{report['split']['train']} train / {report['split']['test']} test",
        "penalty": _penalty(report["penalty"]),
        "ALS": (
            f"rank {s['rank']}, reg {penalty['value']:g}, {s['als_iterations']} iterations; RMSE "
            f"train factors {rmse['train_factors_on_train']:.3f} on train, "
            f"{rmse['train_factors_on_test']:.3f} on test; test factors "
            f"{rmse['test_factors_on_test']:.3f} on test, {rmse['test_factors_on_train']:.3f} "
            f"on train (train mean on test: {rmse['mean_rating_baseline_on_test']:.3f})"
        ),
        "clusters": (
            f"{s['n_states']} states; test sizes {clusters['test_sizes']}, matched train "
            f"sizes {clusters['train_sizes']}; train/test agreement {clusters['agreement']:.2f}"
        ),
        "factors": (
            f"mean user vector norm {report['mean_norm']['test_users']:.2f} (test), "
            f"{report['mean_norm']['train_users']:.2f} (train); mean squared distance between "
            f"users of two states {distance['test_users']['between_users']:.2f} (between "
            f"cluster means {distance['test_users']['between_means']:.2f}; prior means "
            f"{distance['prior_means']:.2f})"
        ),
        "genres": f"{sum(1 for c in report['genres'].values() if c)} with kept movies: {genres}",
        "offline": (
            f"phi_hat ({report['offline_model']['transitions']}): change probability "
            f"{report['offline_model']['mean_change_probability']:.4f} per round; expected "
            f"state changes per run {report['expected_changes_per_run']:.2f}"
        ),
    }
    width = max(len(k) for k in lines)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in lines.items())


def _penalty(penalty: dict) -> str:
    if penalty["mode"] != "auto":
        return f"{penalty['value']:g} (fixed)"
    searched = ", ".join(f"{reg:g} {rmse:.4f}" for reg, rmse in penalty["searched"])
    return (
        f"{penalty['chosen']:g}, chosen by held-out RMSE {penalty['validation_rmse']:.4f} "
        f"(searched: {searched}; grid {penalty['grid'][0]}..{penalty['grid'][-1]}, x2 steps; "
        f"{penalty['held_out']} held out, fitted on {penalty['fitted']})"
    )
