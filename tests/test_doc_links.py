"""Every relative link in the README and docs/ reaches a file, and every `#anchor` a heading of
that file, by GitHub's rule for heading anchors."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", re.DOTALL)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_`
    dropped (backticks included), spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def prose(document: Path) -> str:
    """A Markdown file's text without its fenced code blocks, read once per test session."""
    return CODE.sub("", document.read_text(encoding="utf-8"))


@functools.cache
def anchors(document: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings; a repeated heading's get -1, -2, ..."""
    seen: dict[str, int] = {}
    result = set()
    for line in prose(document).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading is None:
            continue
        anchor = github_anchor(heading.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        result.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(result)


def relative_links(document: Path) -> list[str]:
    return [link for link in LINK.findall(prose(document)) if not re.match(r"[a-z]+:", link)]


def test_anchor_rule_matches_a_known_link() -> None:
    heading = "Numbers (`decoding.clause_split_tokens`, `decoding.numbers_first`)"
    assert github_anchor(heading) == "numbers-decodingclause_split_tokens-decodingnumbers_first"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_relative_links_resolve(document: Path) -> None:
    broken = []
    for link in relative_links(document):
        path, _, anchor = link.partition("#")
        target = (document.parent / path).resolve() if path else document
        if not target.exists():
            broken.append(f"{link}: no file {os.path.relpath(target, ROOT)}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading with that anchor")
    assert not broken, f"{document.name}: " + "; ".join(broken)
