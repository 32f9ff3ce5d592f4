"""Every ``{glue:...}`` role in a chapter names a key the chapter glues, and every glued key is
used: a missing key fails the strict build only after every chapter has executed; this finds it
in a second, and an unused one is a computation no reader sees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROLE = re.compile(r"\{glue(?::[a-z]+)?\}`([A-Za-z0-9_]+)(?::[^`]*)?`")
DIRECTIVE = re.compile(r"```\{glue(?::[a-z]+)?\}\s+([A-Za-z0-9_]+)")
GLUED = re.compile(r"""glue\(\s*["']([A-Za-z0-9_]+)["']""")
# Keys glued in a loop: glue(f"ch10_eff_{label}", ...) glues every key with that prefix.
GLUED_PREFIX = re.compile(r"""glue\(\s*f["']([A-Za-z0-9_]+)\{""")


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.md")), ids=lambda p: p.name)
def test_glue_roles_and_calls_match(path: Path):
    text = path.read_text(encoding="utf-8")
    used = set(ROLE.findall(text)) | set(DIRECTIVE.findall(text))
    glued, prefixes = set(GLUED.findall(text)), tuple(GLUED_PREFIX.findall(text))
    unglued = sorted(k for k in used - glued if not k.startswith(prefixes or ("\0",)))
    assert unglued == [], f"{path.name}: roles without a glue() call"
    assert sorted(glued - used) == [], f"{path.name}: glued but never shown"


def test_the_patterns_read_roles_and_calls():
    text = 'a {glue:text}`k1:.2f` b {glue}`k2`\n```{glue:figure} k3\n```\nglue("k1", 1)\n'
    assert set(ROLE.findall(text)) | set(DIRECTIVE.findall(text)) == {"k1", "k2", "k3"}
    assert GLUED.findall(text) == ["k1"]
    assert GLUED_PREFIX.findall('glue(f"ch10_eff_{label}", 1)') == ["ch10_eff_"]
