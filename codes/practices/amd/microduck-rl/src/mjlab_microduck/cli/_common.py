"""What every subcommand shares: tyro parsing with one-line errors, and the refusal line."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from mjlab_microduck.runs.records import RunRecord

T = TypeVar("T")

# The frame of tyro's (rich) error panels: box-drawing characters on a terminal, ASCII ones
# (| + -) when stderr is a file or a pipe.
_FRAME = re.compile(r"^[\s|+\-\u2500-\u257f]+|[\s|+\-\u2500-\u257f]+$")


class Refused(Exception):
    """Bad input: the message is the one line the command prints before exiting with 2."""


def refuse(prog: str, message: object) -> int:
    print(f"{prog}: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _first_error_line(panel: str) -> str:
    lines = [_FRAME.sub("", line) for line in panel.splitlines()]
    lines = [line for line in lines if line]
    # The panel is: title ("Value error", "Parsing error", ...), then the message.
    return lines[1] if len(lines) > 1 else (lines[0] if lines else "invalid arguments")


def parse(cls: type[T], argv: list[str], prog: str, default: T | None = None, **kwargs) -> T:
    """``tyro.cli`` over a request dataclass; a parse error becomes :class:`Refused` (one line)
    instead of tyro's multi-line panel, so every bad input reads the same way. A request with a
    ``check()`` method (what it can refuse on its own, without torch or mjlab) is checked."""
    import tyro

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if default is not None:
                kwargs["default"] = default
            request = tyro.cli(cls, args=argv, prog=prog, **kwargs)
    except SystemExit as exit_:
        if exit_.code in (0, None):  # --help went to stdout
            raise
        raise Refused(_first_error_line(err.getvalue())) from None
    check = getattr(request, "check", None)
    if callable(check):
        check()
    return request


def run_command(prog: str, build: Callable[[], T], act: Callable[[T], int]) -> int:
    """``act(build())``; bad input found while building (a :class:`Refused` or ``ValueError``)
    is one line and exit status 2, and nothing has been created by then."""
    try:
        request = build()
    except (Refused, ValueError) as err:
        return refuse(prog, err)
    return int(act(request))


def finish_run(prog: str, run_dir: Path, record: RunRecord) -> int:
    """Say where the run's record is; a failed run adds its error and exits 1."""
    print(f"run record: {run_dir / 'record.json'} (status {record.status})")
    if record.status != "ok":
        print(f"{prog}: {record.error}", file=sys.stderr)
        return 1
    return 0
