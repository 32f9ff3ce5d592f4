"""What chapter 1 shows of the installed stack and of ``setup_rocm.sh``'s plan.

Problem it solves: the page compares the installed versions of the book's stack with the pins
of ``requirements.txt`` (:func:`version_table`), reading package metadata only, so a broken
package still gets its row; and it shows the numbered steps of the ROCm set-up script's dry
run (:func:`plan_steps`) instead of its whole report, whose prerequisite lines depend on the
machine that builds the page.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pandas as pd
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

BOOK_STACK = ("torch", "warp-lang", "mujoco-warp", "mujoco", "mjlab", "rsl-rl-lib")
"""The packages the book's numbers depend on, in the order of the stack chapter 1 describes."""
_STEP = re.compile(r"^\s*\d+\.\s")


def module_dir() -> Path:
    """The package's module folder (``codes/practices/amd/microduck-rl``): its ``scripts/``."""
    import mjlab_microduck

    return Path(mjlab_microduck.__file__).resolve().parents[2]


def requirements_file() -> Path:
    """The book's ``requirements.txt``, at the root of the repository."""
    from mjlab_microduck.book.results import repo_root

    root = repo_root()
    if root is None:
        raise FileNotFoundError("the book repository (with requirements.txt) was not found")
    return root / "requirements.txt"


def pins(requirements: Path) -> dict[str, str]:
    """The exact pins (``name==version``) of a requirements file, by canonical name."""
    found = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        requirement = Requirement(text)
        exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if len(exact) == 1:
            found[canonicalize_name(requirement.name)] = exact[0]
    return found


def installed_version(name: str) -> str | None:
    """The installed version of ``name`` from its metadata (nothing is imported), or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def agrees(installed: str | None, pinned: str | None) -> bool | None:
    """Whether ``installed`` is the ``pinned`` release, ignoring a local build label such as
    ``+cpu`` (pip's ``==`` does the same); None when either is missing."""
    if installed is None or pinned is None:
        return None
    return Version(installed).public == Version(pinned).public


def version_table(
    requirements: Path | None = None, packages: Iterable[str] = BOOK_STACK
) -> pd.DataFrame:
    """One row per package: the installed version, the one ``requirements`` pins and whether
    they agree (None where either is missing)."""
    pinned = pins(requirements or requirements_file())
    rows = {}
    for name in packages:
        installed = installed_version(name)
        rows[name] = {"installed": installed, "pinned (requirements.txt)": pinned.get(name),
                      "agrees": agrees(installed, pinned.get(name))}  # fmt: skip
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "package"
    return frame


def dry_run(target: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    """``scripts/setup_rocm.sh --dry-run <target>``: its plan, changing nothing."""
    script = module_dir() / "scripts" / "setup_rocm.sh"
    return subprocess.run(["bash", str(script), "--dry-run", target],
                          capture_output=True, text=True, timeout=timeout_s)  # fmt: skip


def plan_steps(output: str, commands_of: Iterable[str] = ()) -> list[str]:
    """The numbered steps of a dry run's ``output``, one line each; under each step whose
    description contains one of ``commands_of``, the command it runs (its ``$`` line)."""
    wanted = tuple(commands_of)
    lines = output.splitlines()
    steps = []
    for i, line in enumerate(lines):
        if not _STEP.match(line):
            continue
        steps.append(line.rstrip())
        if any(text in line for text in wanted):
            for below in lines[i + 1:]:
                if _STEP.match(below):
                    break  # the next step: this one printed no command
                if below.strip().startswith("$"):
                    steps.append(below.rstrip())
                    break
    return steps
