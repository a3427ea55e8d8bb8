"""README.md and the documentation stay short and true to the code.

The README is read in five minutes: at most 300 lines, opening with the commands that install,
run and test (the test command being the one CI runs). Every command they show, in a code block
or inline, names a real ``nslb`` subcommand and its options, a real make target and variable,
and presets, agents, environments and studies that exist; every link of the README reaches a
file or heading that exists (``mkdocs build --strict``, run by ``make lint``, checks the site's).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

from nslb_cli.cli import main
from tests.helpers.paths import CONF, REPO
from tests.helpers.plugins import example_entry_points

README = REPO / "README.md"
PAGES = [README, REPO / "benchmarks" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
MAX_LINES = 300
NSLB = ("nslb", ".venv/bin/nslb")
GROUPS = ("agent", "env", "experiment", "hparams_search")


def code_lines(text: str, inline: bool = True) -> Iterator[str]:
    """The lines of shell that ``text`` shows: its ``bash`` blocks, the ``$ `` lines of its
    ``console`` blocks, and (``inline``) its inline code spans."""
    for language, block in re.findall(r"^```(bash|console)\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            if language == "bash":
                yield line
            elif line.startswith("$ "):
                yield line[2:]
    if inline:
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        yield from re.findall(r"`([^`\n]+)`", prose)


def commands(text: str, inline: bool = True) -> Iterator[list[str]]:
    """Each command of ``text``'s shell lines as words, comments dropped: ``a; b`` is two, and
    ``eval "$(nslb completion bash)"`` is ``nslb completion bash``."""
    for line in code_lines(text, inline):
        for part in re.split(r";\s+", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:  # an inline span that is not shell (a quote left open)
                continue
            inner = [w[2:-1] for w in words if w.startswith("$(") and w.endswith(")")]
            for command in [words, *(shlex.split(c) for c in inner)]:
                if command and (command[0] in NSLB or command[0] == "make"):
                    yield command


def shown() -> list[tuple[str, list[str]]]:
    """Every command of every page, with the page's path."""
    return [
        (page.relative_to(REPO).as_posix(), c) for page in PAGES for c in commands(page.read_text())
    ]


def usage(capsys: pytest.CaptureFixture[str], *arguments: str) -> str:
    """What ``nslb [arguments] --help`` prints (exit status 2: no such command)."""
    try:
        main([*arguments, "--help"])
    except SystemExit as stopped:
        assert stopped.code == 0, f"nslb {' '.join(arguments)}: {capsys.readouterr().err}"
    return capsys.readouterr().out


def make_names() -> tuple[set[str], set[str]]:
    """The Makefile's targets and variables."""
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):(?!=)", makefile, re.M))
    variables = set(re.findall(r"^([A-Z_]+) *[?:]?=", makefile, re.M))
    return targets, variables


def known_options() -> dict[str, set[str]]:
    """What ``group=option`` may name: agents and environments registered (nslb's own and the
    example plugin's), environment presets, experiment presets, studies."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]
    plugin = example_entry_points()

    def presets(group: str) -> set[str]:
        folder = CONF / group
        return {p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.yaml")}

    return {
        "agent": set(points["nslb.agents"]) | set(plugin.get("nslb.agents", {})),
        "env": set(points["nslb.envs"]) | presets("env"),
        "experiment": presets("experiment"),
        "hparams_search": presets("hparams_search"),
    }


def test_the_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; move details to docs/"


def test_the_first_screen_installs_runs_and_tests() -> None:
    """Before the first section: set up, run the main job, run the tests; and the test
    command is the one CI runs."""
    first_screen = README.read_text().split("\n## ")[0]
    assert list(commands(first_screen, inline=False)) == [
        ["make", "install"],
        [".venv/bin/nslb", "run"],
        ["make", "test"],
    ]
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert "make test" in ci, "CI runs exactly the README's test command"


def test_every_nslb_command_shown_exists(capsys: pytest.CaptureFixture[str]) -> None:
    """The subcommand (and ``data``'s own subcommand) is one ``nslb --help`` lists, and every
    ``--option`` is one its ``--help`` (or the top-level usage) names."""
    top = usage(capsys)
    listed = re.findall(r"^  ([a-z]+)(?: ([a-z]+)\b(?![|]))?", top.split("commands:")[1], re.M)
    subcommands: dict[str, set[str]] = {}
    for command, sub in listed:
        subcommands.setdefault(command, set()).update([sub] if sub else [])
    helps: dict[str, str] = {}
    for page, (_, *words) in [(p, c) for p, c in shown() if c[0] in NSLB]:
        if not words or words[0].startswith("-"):
            assert all(w in top for w in words), (page, words)
            continue
        command = words[0]
        assert command in subcommands, f"{page}: nslb {command}: no such command"
        if len(subcommands[command]) > 1:
            assert words[1:2] and words[1] in subcommands[command], (page, words)
        if command not in helps:
            helps[command] = usage(capsys, command) + top
        options = [w.split("=")[0] for w in words if w.startswith("--")]
        unknown = [o for o in options if o not in helps[command]]
        assert not unknown, f"{page}: nslb {' '.join(words)}: {unknown} not in its --help"


def test_every_make_target_and_variable_shown_exists() -> None:
    targets, variables = make_names()
    for page, (_, *words) in [(p, c) for p, c in shown() if c[0] == "make"]:
        for word in words:
            name = word.split("=")[0]
            assert name in (variables if "=" in word else targets), f"{page}: make {word}"


def test_every_agent_environment_and_preset_shown_exists() -> None:
    """``agent=…``, ``env=…``, ``experiment=…`` and ``hparams_search=…`` name what exists, in
    commands and in inline code (``…`` and ``NAME`` are placeholders)."""
    known = known_options()
    named = 0
    for page in PAGES:
        for line in code_lines(page.read_text()):
            pattern = rf"(?<![\w./+-])\+*({'|'.join(GROUPS)})=([\w/,…]+)"
            for group, values in re.findall(pattern, line):
                for value in values.split(","):
                    if "…" in value or value.isupper():
                        continue
                    named += 1
                    assert value in known[group], f"{page}: {group}={value} does not exist"
    assert named > 50, "the pages name presets, agents and environments"


def test_the_readme_links_reach_files_and_headings() -> None:
    text = README.read_text()
    slugs = {heading_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        path, _, anchor = link.partition("#")
        if path:
            assert (REPO / path).exists(), f"README.md links to {path}, which does not exist"
        else:
            assert anchor in slugs, f"README.md links to #{anchor}, which no heading has"


def test_the_home_page_lists_every_guide_page_and_environment() -> None:
    home = (REPO / "docs" / "index.md").read_text()
    for page in sorted((REPO / "docs" / "guide").glob("*.md")):
        assert f"(guide/{page.name})" in home, f"docs/index.md does not link guide/{page.name}"
    for env in (name for name in known_options()["env"] if "/" not in name):
        assert f"`{env}`" in home, f"docs/index.md does not name env={env}"


def heading_slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_checks_above_can_fail(tmp_path: Path) -> None:
    """What the checks read, on text that is wrong: a preset, an agent and a subcommand that do
    not exist are all seen."""
    text = (
        "```bash\nnslb frobnicate agent=nobody   # a comment: agent=ignored\n```\n"
        "Inline: `experiment=paper/none`, `make nothing`.\n"
    )
    assert list(commands(text)) == [["nslb", "frobnicate", "agent=nobody"], ["make", "nothing"]]
    known = known_options()
    assert "nobody" not in known["agent"] and "paper/none" not in known["experiment"]
    assert "nothing" not in make_names()[0]
    with pytest.raises(SystemExit) as stopped:
        main(["frobnicate", "--help"])
    assert stopped.value.code == 2
