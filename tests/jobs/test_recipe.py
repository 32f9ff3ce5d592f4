"""The recipe (``microduck recipe`` / ``make results``): stages, publishing and ordering.

Stage definitions are checked against the profiles. Running a stage is checked with a stand-in
for the driver's ``run`` that lays out a finished run exactly as the driver does (the driver
itself runs real mjlab in test_train_driver.py), so the publishing logic, the kept checkpoints
and the hand-over from the main run to the resume are tested in a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from mjlab_microduck.book.results import expected_checkpoints
from mjlab_microduck.cli.recipe import main as recipe_cli
from mjlab_microduck.jobs import recipe
from mjlab_microduck.runs import records
from mjlab_microduck.runs.names import checkpoint_iteration
from mjlab_microduck.runtime import profiles
from mjlab_microduck.tasks.rl_cfg import EXPERIMENT_NAME, STEPS_PER_ENV
from mjlab_microduck.tasks.velocity import TASK_ID, UNGUARDED_TASK_ID

# ----------------------------------------------------------------------------- stage plans


def test_smoke_stages_follow_the_profile():
    full = recipe.smoke_stages(profiles.get("full"))
    assert [s.publish_as for s in full] == ["smoke_64x5", "smoke_256x5"]
    assert [(s.request.num_envs, s.request.iterations) for s in full] == [(64, 5), (256, 5)]
    assert all(s.request.save_interval == 5 and not s.keep_last_checkpoint for s in full)
    ci = recipe.smoke_stages(profiles.get("ci"))
    assert [(s.publish_as, s.request.num_envs, s.request.iterations) for s in ci] == [
        ("smoke_16x3", 16, 3)
    ]


def test_main_and_resume_stages_are_the_reference_recipe():
    full = profiles.get("full")
    main = recipe.main_stage(full)
    assert main.publish_as == "train_500"
    assert (main.request.num_envs, main.request.iterations, main.request.save_interval) == (
        256, 500, 100
    )  # fmt: skip
    assert main.request.task == TASK_ID and main.request.seed == 42
    assert main.request.resume_from is None and main.keep_last_checkpoint
    resume = recipe.resume_stage(full, Path("somewhere/model_499.pt"))
    # 500 updates + 1000 more = 1500; rsl_rl numbers the last one 1498.
    assert resume.publish_as == "resume_1500"
    assert (resume.request.iterations, resume.request.save_interval) == (1000, 250)
    assert resume.request.resume_from == Path("somewhere/model_499.pt")
    assert resume.keep_checkpoints == profiles.PUBLISHED_REPLAY_CHECKPOINTS
    assert expected_checkpoints(499, 1000, 250)[-1] == "model_1498.pt"


def test_ci_resume_stage_is_named_by_total_updates():
    ci = profiles.get("ci")
    resume = recipe.resume_stage(ci, Path(f"model_{ci.main_last_iteration}.pt"))
    assert resume.publish_as == f"resume_{ci.main_iterations + ci.resume_iterations}"
    assert resume.request.iterations == ci.resume_iterations


def test_resume_stage_needs_an_rsl_rl_checkpoint_name():
    with pytest.raises(ValueError, match="not an rsl_rl checkpoint name"):
        recipe.resume_stage(profiles.get("full"), Path("policy_final.pt"))


def test_experiment_stages_inject_the_fault_with_and_without_the_guard():
    unguarded, guarded = recipe.experiment_stages(profiles.get("full"))
    assert unguarded.request.task == UNGUARDED_TASK_ID and unguarded.request.frozen_broadphase
    assert guarded.request.task == TASK_ID and guarded.request.frozen_broadphase
    assert unguarded.request.iterations == 500 and guarded.request.iterations == 100


# ----------------------------------------------------------------------------- running stages


class FakeDriver:
    """Stands in for ``train.run``: writes what the driver leaves behind, without training."""

    def __init__(self, fail: set[str] = frozenset(), interrupt: set[str] = frozenset()):
        self.requests = []
        self.fail = fail
        self.interrupt = interrupt

    def __call__(self, request, stream=None):
        self.requests.append(request)
        run_dir = records.new_run_dir(request.logs_root, request.name)
        start = checkpoint_iteration(request.resume_from) if request.resume_from else 0
        names = expected_checkpoints(start, request.iterations, request.save_interval)
        log_dir = run_dir / "logs" / "rsl_rl" / EXPERIMENT_NAME / "2026-01-01_00-00-00_x"
        log_dir.mkdir(parents=True)
        for name in names:
            torch.save({"actor_state_dict": {"w": torch.zeros(2)}, "critic_state_dict": {},
                        "optimizer_state_dict": {"big": torch.zeros(4)},
                        "iter": checkpoint_iteration(name),
                        "infos": {"env_state": {"common_step_counter": 0}}},
                       log_dir / name)  # fmt: skip
        frame = pd.DataFrame({"Train/mean_reward": [0.0] * request.iterations},
                             index=pd.Index(range(start, start + request.iterations),
                                            name="iteration"))  # fmt: skip
        records.atomic_write_text(run_dir / records.SCALARS_FILENAME, frame.to_csv())
        failed = request.name in self.fail
        record = records.RunRecord(
            run_id=run_dir.name, kind="train", status="failed" if failed else "ok",
            error="boom" if failed else None, config={"num_envs": request.num_envs},
            provenance=records.Provenance(backend="cpu", device_name="cpu", hostname="h",
                                          date=records.utc_now_iso(), profile=request.profile),
            started_at=records.utc_now_iso(), finished_at=records.utc_now_iso(),
            summary={"transitions": request.iterations * request.num_envs * STEPS_PER_ENV,
                     "checkpoints": ",".join(names), "last_checkpoint": names[-1]},
            scalars_csv=records.SCALARS_FILENAME,
        )  # fmt: skip
        if request.name in self.interrupt:
            record = records.mark_interrupted(record, "interrupted by SIGTERM at iteration 3",
                                              signal="SIGTERM")  # fmt: skip
        records.write_record(record, run_dir)
        return run_dir, record


@pytest.fixture()
def fake(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setattr(recipe, "run", driver)
    return driver


def test_run_stage_publishes_the_last_and_the_chosen_checkpoints(fake, tmp_path, capsys):
    full = profiles.get("full")
    stage = recipe.resume_stage(full, tmp_path / "model_499.pt")
    run_dir = recipe.run_stage(stage, tmp_path / "logs", tmp_path / "results", full)
    request = fake.requests[-1]
    assert (request.logs_root, request.device, request.profile) == (
        tmp_path / "logs", full.device, "full"
    )  # fmt: skip
    published = tmp_path / "results" / "resume_1500"
    kept = sorted(p.name for p in published.glob("*.pt"))
    # 499 was asked for but is stage one's file; the resume wrote 500, 750, 1000, 1250, 1498.
    assert kept == ["model_1000.pt", "model_1250.pt", "model_1498.pt", "model_750.pt"]
    assert "no checkpoint for iterations [499]" in capsys.readouterr().out
    record = records.load_record(published)
    records.verify_artifacts(record, published)
    assert record.run_id == run_dir.name
    slim = torch.load(published / "model_1498.pt", weights_only=False)
    assert "optimizer_state_dict" not in slim and slim["slim"] is True


def test_smoke_stage_publishes_no_checkpoint(fake, tmp_path):
    ci = profiles.get("ci")
    (stage,) = recipe.smoke_stages(ci)
    recipe.run_stage(stage, tmp_path / "logs", tmp_path / "results", ci)
    published = tmp_path / "results" / stage.publish_as
    assert sorted(p.name for p in published.iterdir()) == [
        records.RECORD_FILENAME,
        records.SCALARS_FILENAME,
    ]


def test_a_failed_stage_raises_and_publishes_nothing(monkeypatch, tmp_path):
    ci = profiles.get("ci")
    stage = recipe.main_stage(ci)
    monkeypatch.setattr(recipe, "run", FakeDriver(fail={stage.request.name}))
    with pytest.raises(RuntimeError, match=f"stage {stage.publish_as} failed: boom"):
        recipe.run_stage(stage, tmp_path / "logs", tmp_path / "results", ci)
    assert not (tmp_path / "results" / stage.publish_as).exists()


def test_an_interrupted_stage_ends_the_recipe_with_the_signals_exit_status(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(profiles.PROFILE_ENV_VAR, "ci")
    ci = profiles.get("ci")
    driver = FakeDriver(interrupt={f"resume_{ci.main_iterations + ci.resume_iterations}"})
    monkeypatch.setattr(recipe, "run", driver)
    results = tmp_path / "results"
    assert recipe_cli(["--stages", "main,resume,experiment", "--logs-root",
                       str(tmp_path / "logs"), "--results", str(results)]) == 143  # fmt: skip
    resume = f"resume_{ci.main_iterations + ci.resume_iterations}"
    assert [r.name for r in driver.requests] == [f"train_{ci.main_iterations}", resume]
    # The stage before stays published; the stopped one is not, and nothing ran after it.
    assert sorted(p.name for p in results.iterdir()) == [f"train_{ci.main_iterations}"]
    out, err = capsys.readouterr()
    assert "interrupted by SIGTERM at iteration 3 (" in out
    assert err == "microduck recipe: interrupted by SIGTERM\n"


def test_the_resume_stage_takes_a_run_folder_as_resume_from(fake, tmp_path, monkeypatch):
    import run_fakes

    monkeypatch.setenv(profiles.PROFILE_ENV_VAR, "ci")
    source = run_fakes.train_run(tmp_path / "runs", iterations=(0, 5))
    assert recipe_cli(["--stages", "resume", "--resume-from", str(source), "--logs-root",
                       str(tmp_path / "logs")]) == 0  # fmt: skip
    (request,) = fake.requests
    assert request.resume_from == next(source.glob("logs/rsl_rl/*/*/model_5.pt"))


def test_main_hands_its_last_checkpoint_to_the_resume(fake, tmp_path, monkeypatch):
    monkeypatch.setenv(profiles.PROFILE_ENV_VAR, "ci")
    ci = profiles.get("ci")
    logs = tmp_path / "logs"
    assert recipe_cli(["--stages", "main,resume", "--logs-root", str(logs),
                        "--label", "test"]) == 0  # fmt: skip
    main_request, resume_request = fake.requests
    assert main_request.resume_from is None
    assert resume_request.resume_from.name == f"model_{ci.main_last_iteration}.pt"
    assert resume_request.resume_from.is_file()
    (results_dir,) = (logs / "results").iterdir()
    assert results_dir.name.endswith("_test")
    assert sorted(p.name for p in results_dir.iterdir()) == [
        f"resume_{ci.main_iterations + ci.resume_iterations}",
        f"train_{ci.main_iterations}",
    ]


def test_seed_and_task_reach_both_training_stages(fake, tmp_path, monkeypatch):
    monkeypatch.setenv(profiles.PROFILE_ENV_VAR, "ci")
    task = f"{TASK_ID}-ForwardTrackingTuning"
    assert recipe_cli(["--stages", "main,resume", "--logs-root", str(tmp_path / "logs"),
                        "--task", task, "--seed", "7"]) == 0  # fmt: skip
    assert [(r.task, r.seed) for r in fake.requests] == [(task, 7), (task, 7)]


def test_recipe_never_publishes_over_an_existing_result(fake, tmp_path, monkeypatch):
    monkeypatch.setenv(profiles.PROFILE_ENV_VAR, "ci")
    results_dir = tmp_path / "results"
    (results_dir / "smoke_16x3").mkdir(parents=True)
    with pytest.raises(FileExistsError):
        recipe_cli(["--stages", "smoke", "--logs-root", str(tmp_path / "logs"),
                     "--results", str(results_dir)])  # fmt: skip
    assert list((results_dir / "smoke_16x3").iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--stages", "smoke,walk"], "unknown stage(s): walk"),
        (["--stages", "resume"], "the resume stage needs main or --resume-from"),
        (["--stages", "resume", "--resume-from", "/no/model_4.pt"], "no such checkpoint"),
        (["--task", "Nope"], "--task 'Nope': one of"),
        (["--label", "a/b"], "run name 'a/b'"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, fragment, capsys, fake, tmp_path):
    assert recipe_cli([*argv, "--logs-root", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck recipe: ") and fragment in err
    assert fake.requests == []
    assert not (tmp_path / "logs").exists()


def test_diagnostics_call_the_diagnostics_and_write_their_results(tmp_path, monkeypatch):
    """The stage calls doctor, contact check and probe as functions (no captured CLI output)."""
    import json
    from types import SimpleNamespace

    from mjlab_microduck.runtime import contact_check, doctor, ipc_probe

    asked = {}

    def gather(args):
        asked["doctor"] = (args.json, args.device)
        return SimpleNamespace(to_json=lambda: {"checks": ["ok"]})

    def drop(device, frozen_broadphase):
        return SimpleNamespace(device=device, passed=not frozen_broadphase)

    def probe(reuses, ring_size):
        return SimpleNamespace(reuses=reuses, ring=ring_size)

    def write(result, out_root, command, started_at):
        asked.setdefault("probes", []).append((result.ring, command[:2], out_root))
        return out_root / f"probe_{result.ring}"

    monkeypatch.setattr(doctor, "gather", gather)
    monkeypatch.setattr(contact_check, "run_contact_check", drop)
    monkeypatch.setattr(ipc_probe, "run_probe", probe)
    monkeypatch.setattr(ipc_probe, "write_probe_record", write)
    recipe.run_diagnostics(tmp_path, profiles.get("ci"))

    out = tmp_path / "diagnostics"
    assert asked["doctor"] == (True, "cpu")
    assert json.loads((out / "doctor.json").read_text()) == {"checks": ["ok"]}
    assert json.loads((out / "contact.json").read_text())["passed"] is True
    assert json.loads((out / "contact_frozen.json").read_text())["passed"] is False
    assert asked["probes"] == [(1, ["microduck", "probe"], tmp_path),
                               (16, ["microduck", "probe"], tmp_path)]  # fmt: skip
