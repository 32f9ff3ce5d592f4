"""What Warp compiled while a run started: its module-load lines in a trainer's log, counted.

Problem it solves: a training's start-up (launch to its first iteration) includes building every
Warp module the task uses: MuJoCo Warp's physics, its sensors and solvers, compiled for the
device on first use and kept in Warp's kernel cache. On a machine where the task ran before,
the modules load from that cache in milliseconds; on a fresh one they compile for about a
minute. A time to walk read from a record must say which of the two it measured. Warp prints
one line per module load (``Module <name> <hash> load on device 'cuda:0' took 8546.14 ms
(compiled)``, or ``(cached)``); :func:`count_loads` counts them in ``train.log``, and the train
record's summary keeps the counts and the seconds spent compiling.

No-op cases: a log without module lines (Warp quiet, or a trainer that failed before loading
any) counts zero loads; nothing here imports Warp or runs anything on import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# warp/_src/context.py: ScopedTimer(f"Module {name} {hash7} load on device '{device}'"), which
# prints "<label> took <ms:.2f> ms <extra>"; extra is " (compiled)", " (cached)" or " (error)".
_LOAD_RE = re.compile(
    r"^Module (?P<module>\S+)(?: [0-9a-f]{7})? load on device '(?P<device>[^']+)'"
    r"(?: \(block_dim=\d+\))? took (?P<ms>\d+(?:\.\d+)?) ms\s+\((?P<status>compiled|cached|error)\)"
)
COMPILED_KEYS = ("warp_modules_compiled", "warp_compile_s")
"""The summary keys that say what a start-up compiled (0 and 0.0 on a warm machine)."""
SUMMARY_KEYS = ("warp_modules_loaded", *COMPILED_KEYS)
"""The train record's summary keys :meth:`WarpLoads.summary` fills."""


@dataclass(frozen=True)
class WarpLoads:
    """Warp module loads of one log: how many, how many were compiled, and the seconds those
    compilations took (each load's own timer, so loads in parallel processes are not mixed)."""

    loaded: int = 0
    compiled: int = 0
    compile_s: float = 0.0

    def summary(self) -> dict[str, int | float]:
        """The counts under :data:`SUMMARY_KEYS`, for a run record's summary."""
        counts = (self.loaded, self.compiled, round(self.compile_s, 2))
        return dict(zip(SUMMARY_KEYS, counts, strict=True))


def count_loads(lines: Iterable[str]) -> WarpLoads:
    """Count Warp's module-load lines among ``lines``."""
    loaded = compiled = 0
    compile_ms = 0.0
    for line in lines:
        found = _LOAD_RE.match(line.strip())
        if found is None:
            continue
        loaded += 1
        if found["status"] == "compiled":
            compiled += 1
            compile_ms += float(found["ms"])
    return WarpLoads(loaded, compiled, compile_ms / 1000.0)


def count_log(path: str | Path) -> WarpLoads:
    """:func:`count_loads` of a log file; a missing file counts zero loads."""
    path = Path(path)
    if not path.is_file():
        return WarpLoads()
    with path.open(encoding="utf-8", errors="replace") as log:
        return count_loads(log)
