"""Each chapter's ci budget (mjlab_microduck.book.budgets), on the front page and against the
published ci build record: a chapter that took more than twice its budget fails here, by name,
until it is made faster and `make chapter-times` records it again."""

from __future__ import annotations

import pytest

from mjlab_microduck.book import budgets
from mjlab_microduck.book import chapter_times as ct


def test_every_chapter_has_a_budget_and_they_add_up_to_8_minutes():
    assert list(budgets.BUDGETS_S) == [c.stem for c in ct.CHAPTERS]
    assert all(b > 0 for b in budgets.BUDGETS_S.values())
    assert budgets.TOTAL_S == 8 * 60
    assert budgets.TOTAL_S <= budgets.TARGET_CI_S - 4 * 60  # installs take up to 4 minutes


def test_verdicts_compare_each_time_with_its_budget():
    found = budgets.verdicts({"b": 80.5, "a": 30.0, "c": 50.0}, {"a": 30, "b": 40, "c": 20})
    assert [(v.chapter, v.ratio, v.within_budget, v.fails) for v in found] == [
        ("a", 1.0, True, False),
        ("b", 80.5 / 40, False, True),
        ("c", 2.5, False, True),
    ]
    assert not budgets.Verdict("x", 60.0, 30.0).fails  # exactly twice is still allowed
    with pytest.raises(KeyError, match="chapters without a ci budget: z"):
        budgets.verdicts({"z": 1.0}, {"a": 30})


def test_the_front_page_shows_each_budget_beside_its_chapters_ci_time():
    frame = ct.table()
    columns = list(frame.columns)
    assert columns.index("ci budget") == columns.index(ct.headers(ct.ci_build(), [])["ci"]) + 1
    for chapter, cell in zip(ct.CHAPTERS, frame["ci budget"], strict=True):
        assert cell == ct.duration_text(budgets.BUDGETS_S[chapter.stem])
    assert "8.0 min of chapter execution" in ct.caption()


@pytest.mark.parametrize("chapter", list(budgets.BUDGETS_S))
def test_the_recorded_ci_time_is_at_most_twice_the_budget(chapter):
    ci = ct.ci_build()
    if ci is None:
        pytest.skip(f"no {ct.CI_BUILD_RECORD} record yet: `make chapter-times`")
    assert chapter in ci.seconds, f"{ct.CI_BUILD_RECORD} has no time for {chapter}"
    (verdict,) = budgets.verdicts({chapter: ci.seconds[chapter]})
    prov = ci.record.provenance
    assert not verdict.fails, (
        f"{chapter} took {verdict.seconds:.0f} s in the ci build of {ci.record.started_at[:10]} "
        f"(commit {prov.git_commit[:7]}, {prov.machine_label}), {verdict.ratio:.1f} times its "
        f"budget of {verdict.budget_s:.0f} s (mjlab_microduck/book/budgets.py): make the chapter "
        "faster, then `make chapter-times`"
    )
