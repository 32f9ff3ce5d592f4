"""The console scripts from before the one command, each running one ``microduck`` subcommand."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mjlab_microduck.cli import main


def _alias(command: str) -> Callable[[], None]:
    def run() -> None:
        sys.exit(main([command, *sys.argv[1:]]))

    run.__doc__ = f"``microduck {command}``"
    return run


train = _alias("train")
replay = _alias("replay")
bench = _alias("bench")
doctor = _alias("doctor")
contact_check = _alias("contact-check")
gait_test = _alias("gait-test")
