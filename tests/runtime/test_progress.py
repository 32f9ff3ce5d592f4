"""Progress reporting: a bar where it can redraw, a few milestone lines elsewhere.

What this proves: outside a terminal and a Jupyter kernel, 500 updates print exactly four
lines (25, 50, 75 and 100 %); ``MICRODUCK_PROGRESS`` overrides the choice and a bad value is
refused by name; ``enabled=False`` and ``off`` print nothing; a terminal gets tqdm's bar.
"""

from __future__ import annotations

import io

import pytest

from mjlab_microduck.runtime import progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_non_interactive_stream_gets_four_milestone_lines(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    out = io.StringIO()
    with progress.progress_bar(500, "gait test", stream=out) as bar:
        for _ in range(500):
            bar.update()
    lines = out.getvalue().splitlines()
    assert [line.split(" in ")[0] for line in lines] == [
        "gait test: 25% (125/500)",
        "gait test: 50% (250/500)",
        "gait test: 75% (375/500)",
        "gait test: 100% (500/500)",
    ]


def test_updates_of_several_steps_cross_several_milestones_at_once(monkeypatch):
    monkeypatch.setenv(progress.ENV_VAR, "milestones")
    out = io.StringIO()
    with progress.progress_bar(4, "x", stream=out) as bar:
        bar.update(3)
        bar.update()
    assert len(out.getvalue().splitlines()) == 4


@pytest.mark.parametrize("how", ["off", "disabled"])
def test_off_prints_nothing(how, monkeypatch):
    monkeypatch.setenv(progress.ENV_VAR, "off" if how == "off" else "milestones")
    out = io.StringIO()
    with progress.progress_bar(10, "x", enabled=how != "disabled", stream=out) as bar:
        for _ in range(10):
            bar.update()
    assert out.getvalue() == ""


def test_a_terminal_gets_the_bar_and_the_variable_overrides_it(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    assert progress.style(Tty()) == "bar"
    assert progress.style(io.StringIO()) == "milestones"
    monkeypatch.setenv(progress.ENV_VAR, "milestones")
    assert progress.style(Tty()) == "milestones"
    out = Tty()
    monkeypatch.setenv(progress.ENV_VAR, "bar")
    with progress.progress_bar(3, "bar test", stream=out) as bar:
        bar.update(3)
    assert "bar test" in out.getvalue() and "3/3" in out.getvalue()


def test_a_bad_style_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(progress.ENV_VAR, "loud")
    with pytest.raises(ValueError, match="MICRODUCK_PROGRESS='loud': use one of bar, milestones"):
        progress.style()
