"""``microduck probe``: the options are the fields of
:class:`~mjlab_microduck.runtime.ipc_probe.ProbeRequest`, checked before the probe starts."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import parse, run_command

DESCRIPTION = "Probe interprocess GPU event reuse (the ROCm 7.2 32-slot bug)."


def main(argv: list[str] | None = None, prog: str = "microduck probe") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.runtime import ipc_probe

    def build() -> ipc_probe.ProbeRequest:
        return parse(ipc_probe.ProbeRequest, argv, prog, description=DESCRIPTION)

    return run_command(prog, build, lambda request: ipc_probe.run_request(request, argv))
