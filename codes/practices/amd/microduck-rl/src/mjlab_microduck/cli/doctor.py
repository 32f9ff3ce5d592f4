"""``microduck doctor``: the options are the fields of
:class:`~mjlab_microduck.runtime.doctor.DoctorRequest`; the report is a table (or JSON), and an
unsupported stack ends with one line on stderr and exit status 1."""

from __future__ import annotations

import json
import sys

from mjlab_microduck.cli._common import parse, run_command

DESCRIPTION = "Check that this machine's GPU stack is one the MicroDuck book supports."


def main(argv: list[str] | None = None, prog: str = "microduck doctor") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.runtime import doctor

    def build() -> doctor.DoctorRequest:
        return parse(doctor.DoctorRequest, argv, prog, description=DESCRIPTION)

    return run_command(prog, build, lambda request: _report(doctor, request))


def _report(doctor, request) -> int:
    report = doctor.gather(request)
    if request.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        print(doctor.render_text(report))
    # Warnings go to stderr too, before the one fail-closed line, which stays the last line.
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    problems = report.unsupported
    if problems:
        more = f" (+{len(problems) - 1} more in the table)" if len(problems) > 1 else ""
        print(problems[0] + more, file=sys.stderr)
        return 1
    return 0
