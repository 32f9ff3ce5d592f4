"""``microduck export``: the options are the fields of :class:`ExportCli` (the checkpoint is the
one positional argument). The run name and the checkpoint file are checked before mjlab is
imported; an unknown task, weights that do not fit it or a term plain MuJoCo cannot compute are
refused once the environment is built, before the run folder is made. Either way: one line on
stderr and exit status 2, and nothing is created.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from mjlab_microduck.cli._common import Refused, finish_run, parse, refuse

PROG = "microduck export"


@dataclass(frozen=True)
class ExportCli:
    """Export a checkpoint for plain MuJoCo and the browser: policy.onnx, scene.xml, spec.json
    and a run record."""

    checkpoint: tyro.conf.Positional[Annotated[Path, tyro.conf.arg(metavar="CHECKPOINT")]]
    """Full or slim rsl_rl checkpoint (``actor_state_dict`` inside)."""
    task: Annotated[
        tyro.conf.DisallowNone[str | None],
        tyro.conf.arg(help_behavior_hint="(default: the task of the training record beside it)"),
    ] = None
    """a registered mjlab task"""
    out: Path = Path("logs/exports")
    """where the run folder is made"""
    name: Annotated[
        tyro.conf.DisallowNone[str | None],
        tyro.conf.arg(help_behavior_hint="(default: export_<checkpoint stem>)"),
    ] = None
    """run name"""

    def check(self) -> None:
        """What is wrong without mjlab: the run name and the checkpoint file."""
        from mjlab_microduck.runs import names

        if self.name is not None:
            try:
                names.check_run_name(self.name)
            except ValueError as err:
                raise Refused(str(err)) from None
        if not self.checkpoint.is_file():
            raise Refused(f"checkpoint {self.checkpoint}: no such file")


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(ExportCli, argv, prog)
    except Refused as err:
        return refuse(prog, err)
    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
    from mjlab_microduck.jobs import export

    request = export.ExportRequest(checkpoint=args.checkpoint, task=args.task)
    try:
        run_dir, record = export.run(request, args.out, args.name)
    except (export.ExportError, export.replay.ReplayError) as err:
        return refuse(prog, err)
    summary = record.summary
    print(
        f"policy.onnx {summary['policy_bytes']} bytes, obs {summary['obs_dim']}, "
        f"actions {summary['action_dim']}; spec vs mjlab observation "
        f"{summary['max_abs_obs_diff']:.1e}, ONNX vs torch {summary['max_abs_action_diff']:.1e}"
    )
    return finish_run(prog, run_dir, record)
