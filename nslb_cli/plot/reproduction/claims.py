"""What a paper claims, as data: its presets' settings (``Setting``), its claims (``Claim``)
and the paper with both (``Paper``); the declarations are in ``papers``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nslb_cli.plot import labels as lab

BEATS, ALIKE, SHRINKS, GAINS = "beats", "alike", "shrinks", "gains more"  # the kinds of claim


@dataclass(frozen=True)
class Setting:
    """What the paper ran for one of nslb's presets: the figure, its metric, its horizon, its
    seeds and its data (``None``: the paper does not say, or there are no data)."""

    figure: str
    metric: str
    horizon: int | None
    seeds: int | None
    data: str | None = None  # the release, as ``identity.dataset(short=True)`` names it


@dataclass(frozen=True)
class Claim:
    """``better`` beats ``worse`` (``BEATS``) on the metric of ``preset``, or neither does
    (``ALIKE``, on ``metric`` where given); ``SHRINKS``: ``better``'s per-seed statistic
    ``metric`` is lower at its longest exploration than at its shortest (``worse`` unused).

    With ``against``, another preset of the paper whose seeds are the same worlds: ``BEATS``
    and ``ALIKE`` read ``better`` in ``preset`` and ``worse`` in ``against``, seed by seed;
    ``GAINS``: ``better``'s gain over ``worse`` is larger in ``preset`` than in ``against``
    (the difference of the two paired differences, seed by seed)."""

    preset: str
    better: str
    worse: str = ""
    kind: str = BEATS
    metric: str = ""  # "": the preset's
    note: str = ""  # words the claim adds, e.g. "(known model)"; SHRINKS: the statistic
    against: str = ""  # "": both agents in ``preset``

    def text(self, where: Mapping[str, str] | None = None) -> str:
        """The claim in words, agents by their display names; ``where``: words for each
        preset (its ``Setting.figure``), which a claim ``against`` another preset names."""
        first, second = lab.display_name(self.better), lab.display_name(self.worse or "")
        note = f" {self.note}" if self.note else ""
        if self.against:
            here, there = ((where or {}).get(p, p) for p in (self.preset, self.against))
            if self.kind == GAINS:
                return f"{first}'s gain over {second} is larger at {here} than at {there}{note}"
            first, second = f"{first} ({here})", f"{second} ({there})"
        if self.kind == ALIKE:
            return f"{first} and {second} perform alike{note}"
        if self.kind == SHRINKS:
            return f"{first}'s {self.note or self.metric} shrinks as its exploration grows"
        return f"{first} beats {second}{note}"


@dataclass(frozen=True)
class Paper:
    """One paper's claims and the settings it ran them in, keyed by nslb's preset (the key
    ``paper.preset_groups`` gives its group); its table is written to ``stem``."""

    stem: str  # reproduction.md/.csv/.tex, reproduction-<paper>…
    title: str
    settings: Mapping[str, Setting]
    claims: tuple[Claim, ...]
    notes: str = ""  # how nslb's runs stand for the paper's, for the table's text

    def metric(self, claim: Claim) -> str:
        """The metric ``claim`` is read on."""
        return claim.metric or self.settings[claim.preset].metric

    def text(self, claim: Claim) -> str:
        """``claim`` in words, a preset it compares against another named by its figure."""
        return claim.text({key: setting.figure for key, setting in self.settings.items()})
