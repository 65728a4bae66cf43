"""README.md and docs/*.md point at what exists: every relative link at a file (and, with an
#anchor, at a heading of it, by GitHub's anchor rules), every repository path written in
backticks at a file or directory of the repository, and every `pulse …` command written in
backticks at a command of the command line (read from its click group: no subprocess, no network).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import click
import pytest

from pulse.cli import main

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PATH_PREFIXES = ("pulse/", "actors/", "schedules/", "tests/", "docker/", "docs/", ".ci/")
# Paths the documentation names that are not in the repository, on purpose.
NOT_IN_REPOSITORY = {"docker/.env": "the operator's copy of docker/.env.example (ignored by git)"}

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`]+)`")  # may run over a line break, as Markdown's do
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
OPTION = re.compile(r"(?:^|(?<=[\s\[|]))(--?[A-Za-z][\w-]*)")


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


def anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lowercase, punctuation dropped, spaces to '-',
    a repeated one numbered (-1, -2 …)."""
    seen: Counter[str] = Counter()
    found = set()
    for _, title in HEADING.findall(prose(text)):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link counts as its text
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    problems = []
    for target in LINK.findall(CODE_SPAN.sub("", prose(text))):
        if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto: …: not a file of the repository
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if ROOT.resolve() not in (where, *where.parents):
            problems.append(f"{page.name}: {target} leads out of the repository")
        elif not where.exists():
            problems.append(f"{page.name}: {target}: no such file")
        elif anchor and (where.is_dir() or anchor not in anchors(where.read_text(encoding="utf-8"))):
            problems.append(f"{page.name}: {target}: no heading with that anchor in {where.name}")
    return problems


def spans(page: Path) -> list[str]:
    """The code spans of a page, and the commands of its indented code blocks (their comments left out)."""
    text = page.read_text(encoding="utf-8")
    found = [" ".join(span.split()) for span in CODE_SPAN.findall(prose(text))]
    found += [line.split("  #")[0].strip() for line in text.splitlines() if line.startswith("    pulse ")]
    return found


def missing_paths(page: Path) -> list[str]:
    problems = []
    for span in spans(page):
        path = span.split("::")[0]  # tests/x.py::test_y
        if " " in path or "/" not in path or not path.startswith(PATH_PREFIXES):
            continue
        if re.search(r"[<>*{}…]", path) or path in NOT_IN_REPOSITORY:  # a pattern (actors/<queue>.py)
            continue
        if not (ROOT / path).exists():
            problems.append(f"{page.name}: `{span}`: no such path")
    return problems


def unknown_commands(page: Path) -> list[str]:
    problems = []
    for span in spans(page):
        words = span.split()
        if len(words) < 2 or words[0] != "pulse":
            continue
        command: click.Command = main
        context = click.Context(main)  # pulse imports a command's module when asked for it (get_command)
        options = {"--help"}
        rest = words[1:]
        while rest and isinstance(command, click.Group) and rest[0] in command.list_commands(context):
            options |= {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            command = command.get_command(context, rest.pop(0)) or command
        options |= {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        if command is main and not rest[0].startswith("-"):
            problems.append(f"{page.name}: `{span}`: no command {rest[0]!r}")
            continue
        for option in OPTION.findall(" ".join(rest)):
            if option not in options:
                problems.append(f"{page.name}: `{span}`: {command.name} has no option {option}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading(page):
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_in_backticks_exists(page):
    assert missing_paths(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_pulse_command_in_backticks_is_one(page):
    assert unknown_commands(page) == []


def test_the_checks_catch_what_is_broken(tmp_path):
    """Each check reports a planted mistake, and passes what is right beside it."""
    globals()["ROOT"], root = tmp_path, ROOT  # the checks read the repository root from ROOT
    try:
        (tmp_path / "pulse").mkdir()
        (tmp_path / "other.md").write_text("# Other page\n\n## Middleware (`pulse/middleware/`, in order)\n")
        page = tmp_path / "page.md"
        page.write_text(
            "# Page\n\n"
            "[ok](other.md#middleware-pulsemiddleware-in-order) [ok](#page) [ok](https://example.com)\n"
            "[gone](missing.md) [bad anchor](other.md#nowhere) [out](../elsewhere.md)\n"
            "`pulse/` `pulse/nothing.py` `pulse/<domain>/`\n"
            "`pulse health --worker` `pulse queues pause QUEUE` `pulse nonsense` `pulse health --nowhere`\n"
            "```\n[in a fence](missing-too.md)\n```\n"
        )
        assert broken_links(page) == [
            "page.md: missing.md: no such file",
            "page.md: other.md#nowhere: no heading with that anchor in other.md",
            "page.md: ../elsewhere.md leads out of the repository",
        ]
        assert missing_paths(page) == ["page.md: `pulse/nothing.py`: no such path"]
        assert unknown_commands(page) == [
            "page.md: `pulse nonsense`: no command 'nonsense'",
            "page.md: `pulse health --nowhere`: health has no option --nowhere",
        ]
    finally:
        globals()["ROOT"] = root


def test_anchors_follow_githubs_rules():
    assert anchors("# Clusters\n## Queues and jobs\n### Middleware (`pulse/middleware/`, in order)\n## Clusters\n") == {
        "clusters",
        "queues-and-jobs",
        "middleware-pulsemiddleware-in-order",
        "clusters-1",
    }
