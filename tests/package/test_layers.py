"""The package's import structure: importing it does nothing, layers import only downwards,
and no two modules import each other, not even through an import inside a function."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest
import suite_memo

SRC = Path(__file__).resolve().parents[2] / "codes" / "practices" / "amd" / "microduck-rl" / "src"
PACKAGE = SRC / "mjlab_microduck"

# What each layer may import (besides itself). The order is the one in the package docstring.
ALLOWED: dict[str, set[str]] = {
    "robot": set(),
    "runs": set(),
    "analysis": {"runs"},
    "compat": set(),
    "tasks": {"robot", "compat", "runs"},
    "runtime": {"compat", "runs"},
    "jobs": {"robot", "tasks", "compat", "runtime", "runs", "analysis"},
    "book": {"robot", "tasks", "compat", "runtime", "runs", "analysis", "jobs"},
    "cli": {"robot", "tasks", "compat", "runtime", "runs", "analysis", "jobs"},
}
# Modules a layer may import although their layer is not in its list: the backend detector,
# the dispatch counter and the graph replay import nothing from the package but each other (a
# test checks), so the hooks can share them without a cycle;
# `microduck records map` writes the README section the book's map of runs renders (reading
# records only: no torch, no mjlab), and `microduck records drive-export` the files the book's
# drive page reads (records and the export of the book's checkpoint): the two commands that
# import the book layer.
ALLOWED_MODULES: dict[str, set[str]] = {
    "compat": {"mjlab_microduck.runtime.backend", "mjlab_microduck.runtime.dispatch_count",
               "mjlab_microduck.runtime.graph_replay"},
    "cli": {"mjlab_microduck.book.results_map", "mjlab_microduck.book.drive"},
}
HEAVY = ("torch", "mjlab", "warp", "mujoco", "mujoco_warp")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every package module ``path`` imports, at module level or inside functions, except under
    ``if TYPE_CHECKING`` (never executed)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name in modules)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    if sub in modules:
                        found.add(sub)
                    elif child.module in modules:
                        found.add(child.module)
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_package_modules():
    assert _cycles(_graph()) == []


def test_every_module_belongs_to_a_known_layer():
    layers = {_layer(m) for m in _modules()} - {None}
    assert layers == set(ALLOWED)


def test_layers_import_only_the_layers_below():
    wrong = [
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _layer(module) is not None
        and _layer(target) is not None
        and _layer(target) != _layer(module)
        and _layer(target) not in ALLOWED[_layer(module)]
        and target not in ALLOWED_MODULES.get(_layer(module), set())
    ]
    assert wrong == []


def test_the_runtime_modules_the_hooks_share_import_nothing_else_from_the_package():
    shared = ALLOWED_MODULES["compat"]
    for module in shared:
        assert _graph()[module] <= shared - {module}, module


def _fresh_python(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    # Made once per build (tests/suite_memo.py): the code and environment are the key.
    proc = suite_memo.run("fresh_python", [sys.executable, "-c", code], env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


PROBE = """
import json, os, sys
before = dict(os.environ)
{imports}
print(json.dumps({{
    "heavy": sorted(m for m in {heavy!r} if m in sys.modules),
    "env_changed": sorted(k for k in set(os.environ) | set(before)
                          if os.environ.get(k) != before.get(k)),
    "tasks_loaded": "mjlab_microduck.tasks" in sys.modules,
    "plotting": sorted(m for m in ("pandas", "matplotlib") if m in sys.modules),
}}))
"""


def test_importing_the_package_registers_nothing_and_patches_nothing():
    facts = _fresh_python(PROBE.format(imports="import mjlab_microduck", heavy=HEAVY))
    # No mjlab means no registry to register in and no warp/mujoco to patch; no env var set
    # means MuJoCo's GL choice is left to whoever imports the tasks.
    assert facts == {"heavy": [], "env_changed": [], "tasks_loaded": False, "plotting": []}


@pytest.mark.parametrize("layer", ["runs", "analysis"])
def test_records_and_analysis_import_neither_torch_nor_mjlab(layer):
    names = [m for m in _modules() if _layer(m) == layer]
    imports = "\n".join(f"import {m}" for m in names)
    facts = _fresh_python(PROBE.format(imports=imports, heavy=HEAVY))
    assert facts["heavy"] == [] and facts["env_changed"] == [] and not facts["tasks_loaded"]


def test_the_command_line_imports_nothing_heavy():
    facts = _fresh_python(PROBE.format(imports="import mjlab_microduck.cli", heavy=HEAVY))
    assert facts == {"heavy": [], "env_changed": [], "tasks_loaded": False, "plotting": []}


@pytest.mark.slow
def test_loading_the_tasks_installs_the_hooks_before_registering():
    code = """
import json
import mjlab  # loads the mjlab.tasks entry points, as mjlab's own commands do
from mjlab.tasks.registry import list_tasks
from mjlab_microduck import compat
from mjlab_microduck.tasks import TASK_ID
import warp
print(json.dumps({"registered": TASK_ID in list_tasks(),
                  "alias": hasattr(warp, "context"),
                  "statuses": {s.fix: s.active for s in compat.report()}}))
"""
    facts = _fresh_python(code)
    assert facts["registered"] is True
    # mjlab 1.3 reads warp.context; the alias hook is what provides it on Warp 1.13.
    assert facts["alias"] is True
    assert facts["statuses"]["warp_alias"] is True
