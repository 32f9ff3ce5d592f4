"""The ``microduck`` command: one entry point, one subcommand per job or diagnostic.

``microduck --help`` lists the subcommands from the table below without importing any of them,
so it answers at once; ``microduck <command> ...`` imports only that command's module. Every
subcommand checks its input (device, task, paths, names) before it creates anything and refuses
bad input with one line on stderr and exit status 2.
"""

from __future__ import annotations

import importlib
import sys

PROG = "microduck"

# name -> (the function that runs it, one-line summary). Each function takes the arguments after
# the command name, checks them and returns the exit status; only the chosen one is imported.
COMMANDS: dict[str, tuple[str, str]] = {
    "train": (
        "mjlab_microduck.cli.train:main",
        "train a MicroDuck task with mjlab/rsl_rl and write a run record",
    ),
    "replay": (
        "mjlab_microduck.cli.replay:main",
        "replay a checkpoint under a fixed command; trajectory, metrics, video",
    ),
    "gait-test": (
        "mjlab_microduck.cli.gait_test:main",
        "run the gait test on a checkpoint and write its record",
    ),
    "export": (
        "mjlab_microduck.cli.export:main",
        "export a checkpoint as ONNX, MJCF and a JSON spec for plain MuJoCo and the browser",
    ),
    "gait-watch": (
        "mjlab_microduck.cli.gait_watch:main",
        "gait-test the checkpoints of running trainings as they are saved",
    ),
    "recipe": (
        "mjlab_microduck.cli.recipe:main",
        "regenerate every recorded result of the book into logs/results/",
    ),
    "bench": (
        "mjlab_microduck.cli.bench:main",
        "benchmark physics, training and the fixes of this machine",
    ),
    "doctor": (
        "mjlab_microduck.cli.doctor:main",
        "check the installed GPU stack and fail closed on a broken one",
    ),
    "contact-check": (
        "mjlab_microduck.cli.contact_check:main",
        "drop a sphere with MuJoCo Warp and check that it lands",
    ),
    "graph-check": (
        "mjlab_microduck.cli.graph_check:main",
        "step an env plainly and replayed from graphs and compare every value",
    ),
    "probe": (
        "mjlab_microduck.cli.probe:main",
        "probe interprocess GPU event reuse (ROCm 7.2 CLR bug)",
    ),
    "execute-book": (
        "mjlab_microduck.cli.execute_book:main",
        "execute the book's notebooks into its execution cache, several at a time",
    ),
    "records": (
        "mjlab_microduck.cli.records:main",
        "validate, verify, publish, fold or map run records; their schema; chapter times",
    ),
}


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {PROG} <command> [options]",
        "",
        "MicroDuck on mjlab: training, replay, benchmarks and diagnostics.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()),
        "",
        f"'{PROG} <command> --help' shows a command's options.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"{PROG}: unknown command {name!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, function = COMMANDS[name][0].split(":")
    return int(getattr(importlib.import_module(module_name), function)(rest))


def console_main() -> None:
    """Console-script entry point (``microduck``)."""
    sys.exit(main())
