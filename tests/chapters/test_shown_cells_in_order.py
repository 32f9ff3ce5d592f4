"""A reader who types a chapter's shown cells, in order, into a fresh kernel gets no NameError.

The check is static, so it costs nothing at build time: every name a shown cell reads must be
a builtin or bound by a shown cell before it (or earlier in the same cell): by an import, an
assignment, a ``for``, ``with`` or ``except ... as`` target, a ``def`` or a ``class``. A folded
cell (``hide-*``) is shown: a reader opens it with a click. Names bound only in removed cells
(``remove-*``) do not count: a reader never sees them.
Comprehension and lambda variables and function parameters are local and skipped. The rule is
tested on made-up cells too, so it can fail.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import jupytext
import pytest

from mjlab_microduck.jobs import execute_book

REPO = Path(__file__).resolve().parents[2]
REMOVED_TAGS = execute_book.REMOVED_TAGS
# What IPython puts in every kernel's namespace.
KERNEL_NAMES = {"display", "get_ipython", "In", "Out", "exit", "quit"}
KNOWN = set(dir(builtins)) | KERNEL_NAMES


class _Names(ast.NodeVisitor):
    """Names a cell binds at its top level, and names it reads before binding them."""

    def __init__(self, bound: set[str]):
        self.bound, self.missing = bound, []
        self._local: list[set[str]] = []

    def _bind_target(self, target: ast.AST) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                (self._local[-1] if self._local else self.bound).add(node.id)

    def visit_Import(self, node):
        for alias in node.names:
            self.bound.add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_Assign(self, node):
        self.visit(node.value)
        for target in node.targets:
            self._bind_target(target)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        self.visit(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self._bind_target(node.target)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self._bind_target(node.target)

    def visit_For(self, node):
        self.visit(node.iter)
        self._bind_target(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_With(self, node):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._bind_target(item.optional_vars)
        for stmt in node.body:
            self.visit(stmt)

    def visit_ExceptHandler(self, node):
        if node.type is not None:
            self.visit(node.type)
        if node.name is not None:  # ``except E as exc`` binds ``exc``
            (self._local[-1] if self._local else self.bound).add(node.name)
        for stmt in node.body:
            self.visit(stmt)

    def _scoped(self, node, params: ast.arguments | None, body) -> None:
        local = set()
        if params is not None:
            for arg in params.posonlyargs + params.args + params.kwonlyargs:
                local.add(arg.arg)
            for arg in (params.vararg, params.kwarg):
                if arg is not None:
                    local.add(arg.arg)
        self._local.append(local)
        for stmt in body if isinstance(body, list) else [body]:
            self.visit(stmt)
        self._local.pop()

    def visit_FunctionDef(self, node):
        for default in node.args.defaults + node.args.kw_defaults:
            if default is not None:
                self.visit(default)
        self.bound.add(node.name)
        # A function body runs when called: names it reads may be bound later in the cell.
        before = list(self.missing)
        self._scoped(node, node.args, node.body)
        self.missing = before

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.bound.add(node.name)

    def visit_Lambda(self, node):
        self._scoped(node, node.args, node.body)

    def _comprehension(self, node, elements):
        self._local.append(set())
        for generator in node.generators:
            self.visit(generator.iter)
            self._bind_target(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        for element in elements:
            self.visit(element)
        self._local.pop()

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            return
        local = any(node.id in scope for scope in self._local)
        if not local and node.id not in self.bound and node.id not in KNOWN:
            self.missing.append(node.id)


def unbound_names(cells: list[str]) -> list[tuple[int, str]]:
    """``(cell number, name)`` for every name a cell reads before any earlier cell binds it."""
    bound: set[str] = set()
    found = []
    for number, source in enumerate(cells):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # an IPython magic or shell line
        names = _Names(bound)
        for stmt in tree.body:
            names.visit(stmt)
        found += [(number, name) for name in dict.fromkeys(names.missing)]
    return found


def shown_cells(path: Path) -> list[str]:
    nb = jupytext.read(path)
    return [
        cell.source
        for cell in nb.cells
        if cell.cell_type == "code" and not set(cell.metadata.get("tags", [])) & REMOVED_TAGS
    ]


def test_the_rule_finds_names_from_hidden_cells_only():
    assert unbound_names(["import pandas as pd\nframe = pd.DataFrame()", "frame.head()"]) == []
    assert unbound_names(["wr.first_held_table(walker_runs)"]) == [
        (0, "wr"), (0, "walker_runs")]  # fmt: skip
    assert unbound_names(["x = [i * 2 for i in range(3)]", "f = lambda a: a + x[0]"]) == []
    assert unbound_names(["def f(a):\n    return a + later\n", "later = 1\nf(2)"]) == []
    assert unbound_names(["for k, v in {}.items():\n    print(k, v)", "print(k)"]) == []
    assert unbound_names(["print(y)\ny = 1"]) == [(0, "y")]
    assert unbound_names(["try:\n    pass\nexcept ValueError as exc:\n    print(exc)"]) == []
    assert unbound_names(["try:\n    pass\nexcept Missing:\n    pass"]) == [(0, "Missing")]


@pytest.mark.parametrize(
    "path", sorted((REPO / "notebooks").glob("*.md")), ids=lambda p: p.name
)
def test_shown_cells_run_in_order(path: Path):
    missing = unbound_names(shown_cells(path))
    assert missing == [], (
        f"{path.name}: shown cells read names that only removed cells (or later cells) bind; "
        f"a reader typing the page gets a NameError: {missing}"
    )
