"""The book's full training recipe as named stages, each a driver run published into the book.

``make results`` (or ``microduck recipe``) regenerates every recorded result on
the reader's own GPU: the two smoke runs, the 500-iteration run, the resume to 1500, the
discarded experiment, replays of the kept checkpoints, the diagnostics (doctor, contact check,
interprocess-event probe) and the benchmark matrix. Results land in a new folder (by default
``logs/results/<date>_<label>/``), beside the published ones in ``book/results/``, never over
them. Stages can run in separate processes: ``main`` and ``resume`` must run in that order,
the others are independent (on a large GPU at 256 envs they fit side by side); ``replay``
replays every checkpoint already published in the results folder. Run ``bench`` on an
otherwise idle GPU: it measures throughput.

A stage stopped by SIGINT, SIGTERM or SIGHUP ends the recipe: its run records itself as
``interrupted`` (in the logs, never published), the stages before it stay published, and the
recipe re-raises the stop (:class:`~mjlab_microduck.jobs.stopping.Interrupted`), so
``microduck recipe`` exits 130 or 143. ``--resume-from`` takes a run folder (its last
checkpoint) as ``microduck train`` does, e.g. the interrupted main stage's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from mjlab_microduck.jobs import stopping
from mjlab_microduck.jobs.train import TrainRequest, publish, resume_checkpoint, run
from mjlab_microduck.runs import names, records
from mjlab_microduck.runs.names import TASK_ID, UNGUARDED_TASK_ID, checkpoint_iteration
from mjlab_microduck.runtime import profiles

ALL_STAGES = ("smoke", "main", "resume", "experiment", "replay", "diagnostics", "bench")


@dataclass(frozen=True)
class Stage:
    """One published run: the request to make and the checkpoints to keep (slim)."""

    publish_as: str
    request: TrainRequest
    keep_checkpoints: tuple[int, ...] = ()
    keep_last_checkpoint: bool = True


def smoke_stages(profile: profiles.Profile) -> list[Stage]:
    return [
        Stage(
            f"smoke_{envs}x{its}",
            TrainRequest(
                name=f"smoke_{envs}x{its}", num_envs=envs, iterations=its, save_interval=its
            ),
            keep_last_checkpoint=False,
        )
        for envs, its in profile.smoke_sizes
    ]


def main_stage(profile: profiles.Profile, task: str = TASK_ID, seed: int = 42) -> Stage:
    its = profile.main_iterations
    return Stage(
        f"train_{its}",
        TrainRequest(
            name=f"train_{its}",
            task=task,
            num_envs=profile.main_envs,
            iterations=its,
            save_interval=profile.main_save_interval,
            seed=seed,
        ),  # fmt: skip
    )


def resume_stage(
    profile: profiles.Profile, checkpoint: Path, task: str = TASK_ID, seed: int = 42
) -> Stage:
    start = checkpoint_iteration(checkpoint)
    more = profile.resume_iterations
    return Stage(
        f"resume_{start + more + 1}",
        TrainRequest(
            name=f"resume_{start + more + 1}",
            task=task,
            num_envs=profile.main_envs,
            iterations=more,
            save_interval=profile.resume_save_interval,
            resume_from=checkpoint,
            seed=seed,
        ),  # fmt: skip
        keep_checkpoints=tuple(profile.replay_checkpoints),
    )


def experiment_stages(profile: profiles.Profile) -> list[Stage]:
    """Chapter 7: the broken broadphase without the guard (as the original run), then with it."""
    its = profile.main_iterations
    short = max(1, min(its, 100))
    return [
        Stage(
            "discarded_unguarded",
            TrainRequest(
                name="discarded_unguarded",
                task=UNGUARDED_TASK_ID,
                num_envs=profile.main_envs,
                iterations=its,
                save_interval=profile.main_save_interval,
                frozen_broadphase=True,
            ),  # fmt: skip
        ),
        Stage(
            "discarded_guarded",
            TrainRequest(
                name="discarded_guarded",
                task=TASK_ID,
                num_envs=profile.main_envs,
                iterations=short,
                save_interval=short,
                frozen_broadphase=True,
            ),  # fmt: skip
        ),
    ]


def run_stage(stage: Stage, logs_root: Path, results_root: Path, profile: profiles.Profile) -> Path:
    """Run one stage and publish it; raises if the run failed (its record stays in the logs)."""
    request = replace(
        stage.request, logs_root=logs_root, device=profile.device, profile=profile.name
    )
    run_dir, record = run(request)
    if record.status == "interrupted":
        print(f"[recipe] stage {stage.publish_as} {record.error} ({run_dir})")
        raise stopping.Interrupted(stopping.exit_status(record.signal) - 128)
    if record.status != "ok":
        raise RuntimeError(f"stage {stage.publish_as} failed: {record.error} ({run_dir})")
    kept = set(stage.keep_checkpoints)
    available = {
        checkpoint_iteration(name) for name in str(record.summary["checkpoints"]).split(",")
    }
    if stage.keep_last_checkpoint:
        kept.add(checkpoint_iteration(str(record.summary["last_checkpoint"])))
    missing = kept - available
    if missing:
        print(f"[recipe] {stage.publish_as}: no checkpoint for iterations {sorted(missing)}")
    publish(run_dir, results_root / stage.publish_as, sorted(kept & available))
    print(f"[recipe] published {stage.publish_as} -> {results_root / stage.publish_as}")
    return run_dir


def replay_published(results_root: Path, profile: profiles.Profile) -> list[Path]:
    """Replay every checkpoint published in ``results_root`` (acceptance settings, with MP4)."""
    from mjlab_microduck.jobs.replay import ReplayRequest
    from mjlab_microduck.jobs.replay import run as run_replay

    done = []
    for record_dir, record in records.find_records(results_root):
        if record.kind != "train":
            continue
        task = str(record.config.get("task", TASK_ID))
        for item in record.artifacts:
            if item.kind != "checkpoint":
                continue
            checkpoint = record_dir / item.path
            request = ReplayRequest(
                checkpoint=checkpoint,
                task=task,
                frames=profile.replay_frames,
                device=profile.device,
                frozen_broadphase=bool(record.config.get("frozen_broadphase", False)),
            )
            name = f"replay_{record_dir.name}_{checkpoint.stem}"
            run_dir, _ = run_replay(request, results_root, name)
            print(f"[recipe] replayed {checkpoint} -> {run_dir}")
            done.append(run_dir)
    return done


def run_diagnostics(results_root: Path, profile: profiles.Profile) -> None:
    """Doctor JSON, contact check (stock and with the fault) and the IPC-event probe."""
    import json

    from mjlab_microduck.runtime import doctor, ipc_probe
    from mjlab_microduck.runtime.contact_check import run_contact_check

    out = results_root / "diagnostics"
    out.mkdir(parents=True, exist_ok=True)
    report = doctor.gather(doctor.DoctorRequest(json=True, device=profile.device))
    records.atomic_write_text(
        out / "doctor.json", json.dumps(report.to_json(), indent=2, default=str) + "\n"
    )
    for frozen in (False, True):
        result = run_contact_check(device=profile.device, frozen_broadphase=frozen)
        name = "contact_frozen.json" if frozen else "contact.json"
        records.atomic_write_text(out / name, json.dumps(result.__dict__, indent=2, default=str))
    for ring in (1, 16):
        started_at = records.utc_now_iso()
        probe = ipc_probe.run_probe(reuses=100, ring_size=ring)
        command = ["microduck", "probe", "--reuses", "100", "--ring", str(ring)]
        ipc_probe.write_probe_record(
            probe, results_root, [*command, "--out", str(results_root)], started_at=started_at
        )


@dataclass(frozen=True)
class RecipeRequest:
    """Which stages of the recipe to run, and where their results go."""

    stages: str = "smoke,main,resume,experiment"
    """comma-separated subset of smoke, main, resume, experiment, replay, diagnostics, bench"""
    logs_root: Path = Path("logs")
    """where the runs are made (git-ignored)"""
    results: Path | None = None
    """results folder (default: a new one in <logs-root>/results)"""
    label: str = "local"
    """machine label for the results folder name"""
    resume_from: Path | None = None
    """checkpoint, or run folder, for the resume stage (default: the main stage's last)"""
    task: str = TASK_ID
    """task of the main and resume stages (a tuning preset to compare)"""
    seed: int = 42
    """env and agent seed of the main and resume stages"""

    def stage_list(self) -> list[str]:
        return [s.strip() for s in self.stages.split(",") if s.strip()]


def validate(request: RecipeRequest) -> RecipeRequest:
    """Refuse bad input before a folder is made (``ValueError``, one line)."""
    wanted = request.stage_list()
    unknown = set(wanted) - set(ALL_STAGES)
    if unknown or not wanted:
        raise ValueError(f"unknown stage(s): {', '.join(sorted(unknown)) or '(none given)'}")
    if "resume" in wanted and "main" not in wanted and request.resume_from is None:
        raise ValueError("the resume stage needs main or --resume-from")
    if request.resume_from is not None:
        request = replace(request, resume_from=resume_checkpoint(request.resume_from))
    from mjlab_microduck.tasks.velocity import TUNING_OF_TASK  # loads mjlab and the tasks

    if request.task not in TUNING_OF_TASK:
        raise ValueError(f"--task {request.task!r}: one of {', '.join(sorted(TUNING_OF_TASK))}")
    names.check_run_name(request.label)
    return request


def run_recipe(request: RecipeRequest) -> Path:
    """Run the requested stages in order; returns the results folder."""
    request = validate(request)
    wanted = request.stage_list()
    profile = profiles.current()
    results = request.results or records.new_run_dir(request.logs_root / "results", request.label)
    results.mkdir(parents=True, exist_ok=True)
    checkpoint = request.resume_from
    if "smoke" in wanted:
        for stage in smoke_stages(profile):
            run_stage(stage, request.logs_root, results, profile)
    if "main" in wanted:
        main_run = run_stage(
            main_stage(profile, request.task, request.seed), request.logs_root, results, profile
        )
        record = records.load_record(main_run)
        from mjlab_microduck.jobs.train import find_mjlab_log_dir

        checkpoint = find_mjlab_log_dir(main_run) / str(record.summary["last_checkpoint"])
    if "resume" in wanted:
        assert checkpoint is not None
        stage = resume_stage(profile, Path(checkpoint), request.task, request.seed)
        run_stage(stage, request.logs_root, results, profile)
    if "experiment" in wanted:
        for stage in experiment_stages(profile):
            run_stage(stage, request.logs_root, results, profile)
    if "replay" in wanted:
        replay_published(results, profile)
    if "diagnostics" in wanted:
        run_diagnostics(results, profile)
    if "bench" in wanted:
        from mjlab_microduck.jobs import bench

        request_bench = bench.default_request(
            profile.device, name="bench", out=results, profile=profile.name
        )
        bench.run(request_bench)
    print(f"[recipe] results in {results}")
    return results
