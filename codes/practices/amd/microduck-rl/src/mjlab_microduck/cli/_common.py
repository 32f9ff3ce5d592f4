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

# tyro's error panels come in two layouts. With UTF-8 output (or the ASCII panels of older
# versions) they are framed: a top border holding the title, content lines between side bars,
# a bottom border. Otherwise they are bare: the title on the first line, then a rule, then the
# content indented by two spaces. Either way a rule (dashes) separates the content's sections,
# and colours and bold (on a terminal) are escape codes.
_CORNERS = "\u256d\u2570\u250c\u2514+"
_SIDES = "\u2502|"
_RULE = set("\u2500-")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Refused(Exception):
    """Bad input: the message is the one line the command prints before exiting with 2."""


def refuse(prog: str, message: object) -> int:
    print(f"{prog}: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _panel_sections(panel: str) -> list[list[tuple[int, str]]]:
    """The content of a tyro error panel: its sections (split at rules and blank lines), each a
    list of ``(indent, text)`` lines, without the frame and the title."""
    lines = [line.rstrip() for line in _ANSI.sub("", panel).splitlines()]
    lines = lines[next((i for i, line in enumerate(lines) if line.strip()), len(lines)) :]
    framed = bool(lines) and lines[0].lstrip()[:1] in _CORNERS
    sections: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for line in lines if framed else lines[1:]:  # a bare panel's first line is its title
        if framed:
            line = line.strip()
            if line[:1] in _CORNERS:  # the top border (with the title) or the bottom one
                continue
            line = line[1:] if line[:1] in _SIDES else line
            line = line[:-1] if line[-1:] in _SIDES else line
            line = line.rstrip()
            margin = 1
        else:
            margin = 2
        line = line[margin:] if line[:margin].isspace() else line
        text = line.strip()
        if not text or set(text) <= _RULE:
            if current:
                sections.append(current)
            current = []
            continue
        current.append((len(line) - len(line.lstrip()), text))
    if current:
        sections.append(current)
    return sections


def _first_error_line(panel: str) -> str:
    """A tyro error panel's message as one line: its first section, wrapped lines joined; for a
    missing required argument, the arguments' names (not their help)."""
    sections = _panel_sections(panel)
    if not sections:
        return "invalid arguments"
    first = sections[0]
    if first[0][1].startswith("Missing from"):
        names = [text for indent, text in first[1:] if indent <= 4]
        if names:
            plural = "s" if len(names) > 1 else ""
            return f"missing required argument{plural}: {', '.join(names)}"
    return " ".join(text for _, text in first)


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
    is one line and exit status 2, and nothing has been created by then. A SIGINT, SIGTERM or
    SIGHUP that the job did not turn into a record itself is one line and ``128 + signal``."""
    from mjlab_microduck.jobs import stopping

    with stopping.signals_raise():
        try:
            try:
                request = build()
            except (Refused, ValueError) as err:
                return refuse(prog, err)
            return int(act(request))
        except (stopping.Interrupted, KeyboardInterrupt) as err:
            return interrupted(prog, err)


def interrupted(prog: str, err: BaseException) -> int:
    """The line and exit status of a command stopped by a signal (130 for SIGINT, 143 for
    SIGTERM): what it had finished keeps its records, a run it had not finished says so in
    its own (or, for a replay or gait test, leaves no folder)."""
    from mjlab_microduck.jobs import stopping

    stop = stopping.as_interrupted(err) or stopping.Interrupted(2)
    print(f"{prog}: {stop}", file=sys.stderr)
    return stop.exit_status


def finish_run(prog: str, run_dir: Path, record: RunRecord) -> int:
    """Say where the run's record is; an ok run stopped on request adds why, a failed run adds
    its error and exits 1, an interrupted one its reason and ``128 + signal`` (130 for SIGINT,
    143 for SIGTERM)."""
    from mjlab_microduck.jobs import stopping
    from mjlab_microduck.runs import stop_request

    print(f"run record: {run_dir / 'record.json'} (status {record.status})")
    if record.status == "ok":
        if record.summary.get(stop_request.SUMMARY_KEY):
            print(f"stopped early: {record.summary[stop_request.SUMMARY_KEY]}")
        return 0
    print(f"{prog}: {record.error}", file=sys.stderr)
    return stopping.exit_status(record.signal) if record.status == "interrupted" else 1
