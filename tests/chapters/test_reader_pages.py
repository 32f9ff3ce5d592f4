"""The book reads as pages that teach, not as the notes of the people who made it.

Two source-level rules, checked on every chapter without building the book:

* A code cell the reader sees (no ``remove-input``, ``remove-cell``, ``hide-input`` or
  ``hide-cell`` tag) must do something a reader would type: train, replay, evaluate, plot,
  print. A cell that only imports, calls ``glue()`` or binds constants (or values looked up
  from a record) is plumbing for the
  prose and is hidden.
* No page, run-record README, repository README or package source talks about how machines
  were obtained: the words lease, lent and pending, and phrases naming a working period
  ("device time", "second lease", ...), never appear. GPU runs are described by their
  machine, their run record and its date.

When the book has been built (``make book``), the same vocabulary rule is also applied to the
rendered text of every page, which includes cell outputs.
"""

from __future__ import annotations

import ast
import html
import os
import re
from pathlib import Path

import jupytext
import pytest
import yaml

from mjlab_microduck.jobs import execute_book

REPO = Path(__file__).resolve().parents[2]
PACKAGE_SRC = REPO / "codes" / "practices" / "amd" / "microduck-rl" / "src"
HTML = REPO / "_build" / "html"
IN_CI = bool(os.environ.get("CI"))

HIDDEN_TAGS = execute_book.HIDDEN_TAGS

# Whole words, case-insensitive. "lent" as a word only: "silent" and "excellent" are fine.
FORBIDDEN_WORDS = re.compile(r"\b(lease[sd]?|leasing|lent|pending|loan(?:s|ed)?|rental)\b",
                             re.IGNORECASE)
# Phrases that name a working period in which machines were held. "session" alone is a
# legitimate word (a POSIX process session, a training session); only its use as a unit of
# machine time is banned.
WORKING_PERIOD = re.compile(
    r"\b(device[- ]time|working period|(?:this|that|the|a|one|each)\s+session'?s?\s+"
    r"(?:device|machine|gpu)\b|(?:first|second|third|fourth|fifth|sixth)\s+(?:period|slot))",
    re.IGNORECASE,
)


def notebook_paths() -> list[Path]:
    return sorted((REPO / "notebooks").glob("*.md"))


def prose_paths() -> list[Path]:
    """Every text file a reader of the book or the repository meets."""
    paths = notebook_paths() + sorted((REPO / "book").glob("*.md"))
    paths += [REPO / "book" / "results" / "README.md", REPO / "README.md"]
    paths += sorted(PACKAGE_SRC.rglob("*.py")) + sorted(PACKAGE_SRC.rglob("*.md"))
    return [p for p in paths if p.is_file()]


def _is_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_constant(k) for k in node.keys) and all(
            _is_constant(v) for v in node.values)
    return False


def _is_lookup(node: ast.AST) -> bool:
    """A constant, or a name, attribute or subscript of one: reads a value, computes nothing."""
    if _is_constant(node) or isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _is_lookup(node.value)
    if isinstance(node, ast.Subscript):
        return _is_lookup(node.value) and _is_lookup(node.slice)
    return False


def _is_glue_call(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "glue"


def is_plumbing(source: str) -> bool:
    """True if the cell only imports, glues or binds constants (comments and blanks aside).

    A cell that does not parse as Python (an IPython magic, a shell escape) is not plumbing:
    it is something the reader would type.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    if not tree.body:
        return True  # only comments or blank lines
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)) or _is_glue_call(stmt):
            continue
        if isinstance(stmt, ast.Assign) and _is_lookup(stmt.value):
            continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and _is_lookup(
                stmt.value):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a bare string: a comment in disguise
        return False
    return True


def visible_code_cells(path: Path):
    """(index, source) of every code cell of a chapter that the built page shows."""
    nb = jupytext.read(path)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        if tags & HIDDEN_TAGS:
            continue
        yield index, cell.source


def vocabulary_hits(text: str) -> list[str]:
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (FORBIDDEN_WORDS, WORKING_PERIOD):
            for match in pattern.finditer(line):
                hits.append(f"line {number}: {match.group(0)!r} in {line.strip()[:100]!r}")
    return hits


# ----------------------------------------------------------------------------- self-checks


@pytest.mark.parametrize("source", [
    "from myst_nb import glue\nimport pandas as pd\n",
    "glue('a', 1, display=False)\nglue('b', x.y, display=False)\n",
    "# just a comment\n\n",
    "N = 3\nNAME = 'x'\nPAIR = (1, -2)\n",
    "s = run.record.summary\nglue('iters', s['iterations'], display=False)\n",
])
def test_plumbing_is_recognised(source):
    assert is_plumbing(source)


@pytest.mark.parametrize("source", [
    "run = train(request)\nglue('x', run.value)\n",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n",
    "print(record.summary)\n",
    "%timeit f()\n",
    "N = compute()\n",
])
def test_work_is_not_plumbing(source):
    assert not is_plumbing(source)


def test_vocabulary_rule_keeps_ordinary_words():
    assert vocabulary_hits("an excellent, silent run; start_new_session=True") == []
    assert vocabulary_hits("the session's device time") != []
    assert vocabulary_hits("On the lent H200") != []
    assert vocabulary_hits("the Second Lease made them") != []
    assert vocabulary_hits("results are PENDING") != []


# ----------------------------------------------------------------------------- the sources


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_no_visible_cell_is_only_imports_or_glue(path: Path):
    offenders = [f"cell {i}: {src.strip().splitlines()[0] if src.strip() else '(empty)'!r}"
                 for i, src in visible_code_cells(path) if is_plumbing(src)]
    assert offenders == [], (
        f"{path.name}: visible cells that only import, glue or set constants; tag them "
        f"remove-input (or hide-input if a reader may want to look): {offenders}"
    )


@pytest.mark.parametrize("path", prose_paths(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_vocabulary_of_machine_loans(path: Path):
    hits = vocabulary_hits(path.read_text(encoding="utf-8"))
    assert hits == [], (
        f"{path.relative_to(REPO)}: describe GPU runs by their machine, run record and date: "
        + "; ".join(hits)
    )


# ----------------------------------------------------------------------------- built pages


def _toc_docs() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    docs = [toc["root"]]
    for part in toc.get("parts", []):
        docs.extend(ch["file"] for ch in part.get("chapters", []))
    return docs


def _visible_text(page: str) -> str:
    """The text of the article body, roughly as a browser shows it (scripts and styles out)."""
    match = re.search(r"<article[^>]*bd-article[^>]*>(.*?)</article>", page, re.S)
    body = match.group(1) if match else page
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


@pytest.mark.parametrize("doc", _toc_docs())
def test_rendered_page_has_no_loan_vocabulary_or_traceback(doc: str):
    page = HTML / f"{doc}.html"
    if not page.is_file():
        message = "the book is not built: run `make book` (make test does it first)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    text = _visible_text(page.read_text(encoding="utf-8"))
    assert vocabulary_hits(text) == []
    assert "Traceback (most recent call last)" not in text


def hidden_code_cells(path: Path):
    """(index, source) of every code cell of a chapter whose code the built page hides."""
    nb = jupytext.read(path)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and set(cell.metadata.get("tags", [])) & HIDDEN_TAGS:
            yield index, cell.source


def defined_functions(source: str) -> list[str]:
    """The functions and classes a cell defines (a cell that does not parse defines none)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in ast.walk(tree) if isinstance(node, kinds)]


def test_a_definition_is_found_wherever_it_sits():
    assert defined_functions("x = 1\nif x:\n    def f():\n        pass\n") == ["f"]
    assert defined_functions("class C:\n    def m(self):\n        pass\n") == ["C", "m"]
    assert defined_functions("print(1)\n") == []


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_hidden_cells_define_no_function(path: Path):
    """Logic a reader cannot see belongs in the package, with its tests: a hidden cell may lay
    out a page but not define a helper."""
    found = {i: names for i, src in hidden_code_cells(path) if (names := defined_functions(src))}
    assert found == {}, f"{path.name}: hidden cells define {found}"
