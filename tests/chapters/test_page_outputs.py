"""What a reader scrolls through: every cell output of the built book is short and quiet.

Checked on the rendered HTML of every chapter (``make book`` first; CI builds it before the
tests): no cell output is longer than 40 lines, no output holds progress-bar redraws (tqdm's
``45%|####`` or ``12.3it/s]``, each a line of its own in a page that cannot redraw) and no
output holds warning text (Python's ``UserWarning``/``DeprecationWarning`` lines, Warp's
``Warp CUDA warning``, a logger's ``[WARNING]``). The page rules are tested on made-up HTML
too, so they can fail.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "_build" / "html"
IN_CI = bool(os.environ.get("CI"))
MAX_OUTPUT_LINES = 40
PROGRESS_BAR = re.compile(r"\d+%\|[^|]*\||\d+(?:\.\d+)?(?:it/s|s/it)\]")
WARNING_TEXT = re.compile(
    r"\b\w*Warning:|Warp CUDA warning|\[WARNING\]|\[WARN\]|warnings\.warn\(", re.IGNORECASE
)


def output_texts(page_html: str) -> list[tuple[str, int]]:
    """Every cell output block (stream, result, error) of one page: its text and its length in
    lines as a reader sees them (a table's rows, a text block's lines)."""
    soup = BeautifulSoup(page_html, "html.parser")
    texts = []
    for output in soup.select("div.cell_output"):
        for block in output.select("pre"):
            text = block.get_text()
            texts.append((text, len(text.rstrip("\n").splitlines())))
        for table in output.select("table"):
            texts.append((table.get_text("\n"), len(table.select("tr"))))
    return texts


def problems(page_html: str) -> list[str]:
    """One line per output that is too long, redraws a progress bar or shows a warning."""
    found = []
    for i, (text, length) in enumerate(output_texts(page_html)):
        lines = text.rstrip("\n").splitlines()
        if length > MAX_OUTPUT_LINES:
            found.append(f"output {i}: {length} lines > {MAX_OUTPUT_LINES}")
        bars = [ln for ln in lines if PROGRESS_BAR.search(ln)]
        if bars:
            found.append(f"output {i}: {len(bars)} progress-bar lines, e.g. {bars[0].strip()!r}")
        warned = [ln for ln in lines if WARNING_TEXT.search(ln)]
        if warned:
            found.append(f"output {i}: warning text {warned[0].strip()[:120]!r}")
    return found


def chapter_pages() -> list[Path]:
    return sorted((HTML / "notebooks").glob("*.html"))


def test_the_rules_catch_long_noisy_outputs():
    long_output = "<div class='cell_output'><pre>" + "line\n" * 41 + "</pre></div>"
    assert problems(long_output) == ["output 0: 41 lines > 40"]
    bar = "<div class='cell_output'><pre>gait test:  45%|####5     | 225/500 [00:12<00:15]</pre>"
    assert "progress-bar lines" in problems(bar + "</div>")[0]
    rate = "<div class='cell_output'><pre>replay frames: 200/200 [00:03, 61.2it/s]</pre></div>"
    assert "progress-bar lines" in problems(rate)[0]
    warned = ("<div class='cell_output'><pre>/x/entity.py:149: UserWarning: Actuator config"
              "</pre></div>")  # fmt: skip
    assert "warning text" in problems(warned)[0]
    fine = ("<div class='cell_output'><pre>gait test model_550.pt: 50% (250/500) in 40.1 s\n"
            "PASSED: 0 failed condition(s)</pre></div>")  # fmt: skip
    assert problems(fine) == []
    # A table is as long as its rows, however many cells each row holds.
    row = "<tr>" + "<td>1.0</td>" * 8 + "</tr>"
    assert problems(f"<div class='cell_output'><table>{row * 40}</table></div>") == []
    assert problems(f"<div class='cell_output'><table>{row * 41}</table></div>") == [
        "output 0: 41 lines > 40"]  # fmt: skip


def test_every_chapter_output_is_short_and_quiet():
    pages = chapter_pages()
    if not pages:
        message = "the book is not built: run `make book` (make test does it first)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    found = {
        page.name: problems(page.read_text(encoding="utf-8"))
        for page in pages
        if problems(page.read_text(encoding="utf-8"))
    }
    assert found == {}, found
