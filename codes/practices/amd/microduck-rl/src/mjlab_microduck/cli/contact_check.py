"""``microduck contact-check``: the options are the fields of
:class:`~mjlab_microduck.runtime.contact_check.ContactCheckRequest`; the exit status is 0 when
the sphere lands, 1 when it does not and 2 on bad input (steps, a device Warp does not have, a
device that is not HIP under ``--require-hip``), refused in one line before the drop."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from mjlab_microduck.cli._common import parse, run_command

PROG = "microduck contact-check"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.runtime import contact_check

    def build() -> contact_check.ContactCheckRequest:
        request = parse(contact_check.ContactCheckRequest, argv, prog)
        contact_check.check_request(request)
        return request

    def act(request: contact_check.ContactCheckRequest) -> int:
        result = contact_check.run_contact_check(
            request.device, request.steps, request.frozen_broadphase
        )
        print(json.dumps(asdict(result), sort_keys=True) if request.json else result.line())
        return 0 if result.passed else 1

    return run_command(prog, build, act)
