"""The book's structure: toc and files agree, notebooks are well-formed, the build executed them.

The execution check reads the myst-nb / jupyter-cache database that the strict build
(`make book`) leaves in _build/.jupyter_cache instead of re-running every chapter: each
chapter must have a cached *successful* execution that matches its current code, with no
error output in any cell.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jupytext
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "_build"
HTML = BUILD / "html"
CACHE = BUILD / ".jupyter_cache"
IN_CI = bool(os.environ.get("CI"))

BANNER_RE = re.compile(r"profile=(?P<profile>\w+) \| backend=(?P<backend>\S+)")


def toc_files() -> list[str]:
    """Every document named in _toc.yml (root first), without suffix."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    assert toc["format"] == "jb-book"
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def resolve(doc: str) -> Path:
    matches = [REPO / f"{doc}{ext}" for ext in (".md", ".ipynb") if (REPO / f"{doc}{ext}").exists()]
    assert len(matches) == 1, f"{doc}: expected exactly one of .md/.ipynb, found {matches}"
    return matches[0]


def notebook_paths() -> list[Path]:
    return sorted((REPO / "notebooks").glob("*.md"))


def test_toc_has_the_chapter_plan():
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    assert toc["root"] == "book/intro"
    captions = [p["caption"] for p in toc["parts"]]
    assert captions == ["Getting started", "Training", "Acceptance", "Runtime and performance",
                        "Appendices"]
    files = toc_files()
    chapters = [f for f in files if f.startswith("notebooks/")]
    assert [c.split("/")[1][:2] for c in chapters] == [f"{i:02d}" for i in range(1, 12)]
    assert files[-4:] == ["book/appendix_tests", "book/appendix_reproduce",
                          "book/appendix_reference_stack", "book/references"]


def test_every_toc_entry_exists():
    for doc in toc_files():
        resolve(doc)


def test_every_page_is_in_the_toc():
    listed = set(toc_files())
    on_disk = {p.relative_to(REPO).with_suffix("").as_posix() for p in notebook_paths()}
    on_disk |= {p.relative_to(REPO).with_suffix("").as_posix()
                for p in (REPO / "book").glob("*.md")}
    assert on_disk - listed == set(), "pages missing from _toc.yml"
    assert len(toc_files()) == len(listed), "a page is listed twice in _toc.yml"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_notebook_header_and_template(path: Path):
    text = path.read_text()
    assert text.startswith("---\n"), "no YAML front matter"
    header = yaml.safe_load(text.split("---\n", 2)[1])
    assert header["jupytext"]["formats"] == "md:myst"
    rep = header["jupytext"]["text_representation"]
    assert (rep["extension"], rep["format_name"]) == (".md", "myst")
    assert header["kernelspec"] == {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}

    nb = jupytext.read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a chapter must run some code"
    assert "from mjlab_microduck.book import header" in code[0].source
    assert "header.banner()" in code[0].source, "the first code cell must print the banner"

    # Code comments also start with "# ": only the prose cells hold headings.
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    titles = re.findall(r"^# (.+)$", prose, flags=re.M)
    assert len(titles) == 1, f"expected one title, found {titles}"
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert "Summary" in headings and "Exercises" in headings
    assert headings.index("Exercises") == len(headings) - 1, "Exercises must come last"
    assert "(filled by" not in text, "placeholder note left in the prose"


def test_config_is_strict_and_offline():
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    ex = cfg["execute"]
    assert ex["execute_notebooks"] == "cache"
    assert ex["allow_errors"] is False
    assert ex["timeout"] >= 60
    assert cfg["sphinx"]["config"]["nb_execution_raise_on_error"] is True
    lb = cfg["launch_buttons"]
    assert lb["thebe"] is False
    assert not any(lb.get(k) for k in ("binderhub_url", "jupyterhub_url", "colab_url",
                                       "deepnote_url"))
    assert not cfg["html"]["analytics"]["google_analytics_id"]
    for pattern in ("_build", ".venv*", "codes/**", "tests/**", ".agents", "logs", "README.md",
                    "notebooks/*.ipynb"):
        assert pattern in cfg["exclude_patterns"], pattern


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci_lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()]
    assert ci_lines[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in ci_lines
    commands = [ln for ln in ci_lines if ln and not ln.startswith("#")]
    assert commands[-1] == "make test"
    assert "make test" in readme
    makefile = (REPO / "Makefile").read_text()
    assert "jupyter-book build . -W -n --keep-going" in makefile


# ----------------------------------------------------------------------------- built book


def need_build() -> None:
    if not (HTML / "index.html").is_file() or not CACHE.is_dir():
        message = "the book is not built: run `make book` (make test does it first)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def cache():
    need_build()
    from jupyter_cache import get_cache

    return get_cache(str(CACHE))


def test_build_left_no_execution_failure_reports():
    need_build()
    reports = sorted((HTML / "reports").glob("*.log")) if (HTML / "reports").is_dir() else []
    assert reports == [], f"execution failure reports: {[r.name for r in reports]}"


def test_every_toc_page_was_rendered():
    need_build()
    for doc in toc_files():
        assert (HTML / f"{doc}.html").is_file(), f"{doc}.html missing from the built book"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_notebook_executed_successfully(cache, path: Path):
    uri = str(path.resolve())
    try:
        project = cache.get_project_record(uri)
    except KeyError:
        pytest.fail(f"{path.name}: the build never executed this notebook")
    assert not project.traceback, f"{path.name}: last execution failed:\n{project.traceback}"
    try:
        record = cache.get_cached_project_nb(uri)
    except KeyError:
        record = None
    assert record is not None, (
        f"{path.name}: no successful cached execution matches the current code; "
        "run `make book`"
    )
    nb = cache.get_cache_bundle(record.pk).nb
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == [], f"{path.name}: a cell raised {errors[0].get('ename')}"
    first = next(c for c in nb.cells if c.cell_type == "code")
    text = "".join(o.get("text", "") for o in first.get("outputs", [])
                   if o.get("output_type") == "stream")
    match = BANNER_RE.search(text)
    assert match, f"{path.name}: the first cell printed no banner: {text!r}"
    assert match["profile"] in {"ci", "full"}
    if IN_CI:
        assert match["profile"] == "ci", f"{path.name}: CI must build the ci profile"


# pandas cuts a cell longer than display.max_colwidth and ends it with "...": a run name or a
# sentence cut in the middle says nothing
CUT_CELL_RE = re.compile(r"[^\s>.]\.\.\.</td>")


def executed_pages() -> list[Path]:
    """The chapters and the book's own pages with code cells (the front page, appendices)."""
    pages = sorted(p for p in (REPO / "book").glob("*.md") if "{code-cell}" in p.read_text())
    return [*notebook_paths(), *pages]


@pytest.mark.parametrize("path", executed_pages(), ids=lambda p: p.name)
def test_no_table_of_an_executed_notebook_cuts_its_cells(cache, path: Path):
    try:
        record = cache.get_cached_project_nb(str(path.resolve()))
    except KeyError:
        pytest.fail(f"{path.name}: no successful cached execution; run `make book`")
    nb = cache.get_cache_bundle(record.pk).nb
    cut = [match.group(0) for c in nb.cells if c.cell_type == "code"
           for o in c.get("outputs", []) for match in CUT_CELL_RE.finditer(
               "".join(o.get("data", {}).get("text/html", "")))]  # fmt: skip
    assert cut == [], (f"{path.name}: a table cuts its cells ({cut[:3]}): "
                       'pd.set_option("display.max_colwidth", None) in its first cell')
