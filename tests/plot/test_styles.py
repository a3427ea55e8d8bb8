"""Agents' colours in a figure: every built-in agent and a few of one's own told apart."""

from __future__ import annotations

import itertools

import numpy as np

from nslb_cli.agents.base import Style
from nslb_cli.plot.labels import display_name
from nslb_cli.plot.styles import (
    EXTRA_COLORS,
    LINESTYLES,
    MARKERS,
    built_in_styles,
    own_style,
    style_map,
)


def cielab(color: str) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour ``#rrggbb``, from the sRGB and CIE 1976 definitions."""
    rgb = np.array([int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    x, y, z = (xyz @ linear) / np.array([0.95047, 1.0, 1.08883])
    f = [np.cbrt(v) if v > (6 / 29) ** 3 else v / (3 * (6 / 29) ** 2) + 4 / 29 for v in (x, y, z)]
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_every_agent_and_eight_of_ones_own_get_colours_far_apart() -> None:
    """Every built-in agent with a style in one figure (experiment=field/fixed draws 14), with
    8 labels of one's own: a colour each, each pair at least 18 units apart in CIELAB (Delta E 1976;
    before, Exp4.S and GLR-klUCB's ambers were 13.6 apart and CD-TS and D-UCB's pinks 16.4,
    in experiment=field/fixed)."""
    plain = {display_name(name): name for name in built_in_styles()}
    labels = [*plain, *(f"mine{i}" for i in range(8))]
    colors = [style.color for style in style_map(labels, plain).values()]
    assert len(set(colors)) == len(labels)
    pairs = itertools.combinations(colors, 2)
    assert min(np.linalg.norm(cielab(a) - cielab(b)) for a, b in pairs) >= 18
    assert plain.keys() >= {"SW-UCB", "D-UCB", "CUSUM-UCB", "GLR-klUCB", "D-TS", "SW-TS", "BOCD-TS"}


def test_an_agent_that_declares_no_style_gets_the_next_free_colour() -> None:
    styles = style_map(["mTS", "eps_greedy"], {"mTS": "mts", "eps_greedy": "eps_greedy"})
    assert styles["mTS"] == own_style("mts")
    assert styles["eps_greedy"] == Style(EXTRA_COLORS[0], LINESTYLES[0], MARKERS[0])
