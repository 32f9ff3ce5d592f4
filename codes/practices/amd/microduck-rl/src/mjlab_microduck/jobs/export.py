"""``microduck export``: a checkpoint as ONNX + MJCF + JSON, for plain MuJoCo and the browser.

Problem it solves: a checkpoint runs only inside mjlab. This job builds the task's play env (one
env, CPU), puts the checkpoint's weights into mjlab's runner and writes, with a run record:

- ``policy.onnx``: the actor with its observation normaliser, exported by mjlab's runner
  (rsl_rl's ONNX wrapper, opset 18, mjlab's metadata attached); input ``obs`` [1, obs_dim],
  output ``actions`` [1, action_dim];
- ``scene.xml``: the scene mjlab compiles (the robot with its actuators as the task builds them,
  the ground plane, the sensors, the options mjlab sets on the compiled model), readable by
  MuJoCo 3.3.8 (``jobs/drive_spec.py`` says what that takes);
- ``spec.json``: the observation terms in order with their sources, scales and delays, the
  default joint pose, the action's scale, offset and delay, the control decimation, the command
  ranges, the heading-law stiffness and the terminations (``jobs/drive_spec.py``).

It checks its own output before the record says ``ok``: the scene compiled by this Python's
MuJoCo equals the env's model in every numeric field but ``site_size`` (a site is a marker: the
XML writer keeps only the radius); a short rollout in the env under a fixed command gives, at
every step, the same observation from the spec's pipeline (``jobs/plain_mujoco.py``, fed with
the env's state) as from mjlab, and the same actions from the ONNX file as from the torch policy.
The largest differences are in the summary.

Bad input (a missing or unreadable checkpoint, an unknown task, weights that do not fit, a run
name, a term plain MuJoCo cannot compute) is one :class:`ExportError` line before the run folder
exists; a failure after it was made removes it again.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mjlab_microduck.jobs import recording, replay
from mjlab_microduck.runs import names

POLICY_FILENAME = "policy.onnx"
SCENE_FILENAME = "scene.xml"
SPEC_FILENAME = "spec.json"
CHECK_STEPS = 50
"""Control steps of the self-check rollout (1 s at 50 Hz); fewer if the robot falls first."""
CHECK_COMMAND = (0.15, 0.0, 0.3)
"""The self-check's command: forward and turning, so every term of the observation moves."""
OBS_TOLERANCE = 1e-4
ACTION_TOLERANCE = 1e-4
IGNORED_MODEL_FIELDS = ("site_size",)


class ExportError(replay.ReplayError):
    """Bad export input, or an export that failed its own check; one line."""


@dataclass(frozen=True)
class ExportRequest:
    checkpoint: Path
    """Full or slim rsl_rl checkpoint (``actor_state_dict`` inside)."""
    task: str | None = None
    """None: the task of the training record beside the checkpoint, else the default task."""


def default_name(checkpoint: Path) -> str:
    """``export_<checkpoint stem>``, characters a run name may not hold replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"export_{Path(checkpoint).stem}")


def resolved_task(request: ExportRequest) -> str:
    from mjlab_microduck.jobs import gait_test

    return request.task or gait_test.task_of_checkpoint(request.checkpoint) or gait_test.TASK_ID


def _env_cfg(task: str):
    """The play config with one env, fixed start, no randomisation and every delay at the low
    end of its range, so mjlab's observation and the spec's pipeline can be compared exactly."""
    from mjlab_microduck.tasks import velocity
    from mjlab_microduck.tasks.registry import load_env_cfg

    cfg = load_env_cfg(task, play=True)
    cfg.scene.num_envs = 1
    for name, event in list(cfg.events.items()):
        if event.mode == "startup":
            cfg.events.pop(name)
    cfg.events["reset_base"].params["pose_range"] = {}
    for term in cfg.observations["actor"].terms.values():
        term.delay_max_lag = term.delay_min_lag
    for actuator in cfg.scene.entities["robot"].articulation.actuators:
        actuator.delay_max_lag = actuator.delay_min_lag
    twist = cfg.commands["twist"]
    twist.resampling_time_range = (1.0e9, 1.0e9)
    twist.rel_standing_envs = twist.rel_forward_envs = 0.0
    velocity.hold_yaw_rate(twist)
    return cfg


def _checkpoint_info(path: Path, data: dict) -> dict:
    from mjlab_microduck.runs import records

    iteration = data.get("iter")
    return {"file": Path(path).name, "sha256": records.sha256_file(path),
            "iteration": int(iteration) if iteration is not None else None}  # fmt: skip


def _write_policy(runner, env, run_dir: Path, checkpoint: Path) -> Path:
    from mjlab.rl.exporter_utils import attach_metadata_to_onnx, get_base_metadata

    from mjlab_microduck.runs import records

    with tempfile.TemporaryDirectory(dir=run_dir) as tmp:
        runner.export_policy_to_onnx(tmp, POLICY_FILENAME)
        attach_metadata_to_onnx(str(Path(tmp) / POLICY_FILENAME),
                                get_base_metadata(env, Path(checkpoint).name))  # fmt: skip
        return records.atomic_copy(Path(tmp) / POLICY_FILENAME, run_dir / POLICY_FILENAME)


def _self_check(env, wrapped, policy, folder: Path) -> dict:
    """Roll the env for CHECK_STEPS steps; compare the spec's observation (built from the env's
    state) and the ONNX actions with mjlab's at every step. Returns the largest differences."""
    import mujoco
    import torch

    from mjlab_microduck.jobs import plain_mujoco

    spec = plain_mujoco.load_spec(folder)
    model = mujoco.MjModel.from_xml_path(str(folder / SCENE_FILENAME))
    data = mujoco.MjData(model)
    # The check env runs every delay at the low end of its range (see _env_cfg).
    low = {t["name"]: t["delay_steps"][0] for t in spec["observation"]["terms"]}
    observer = plain_mujoco.Observer(spec, low)
    onnx = plain_mujoco.OnnxPolicy(folder / POLICY_FILENAME)
    term = env.command_manager.get_term(spec["command"]["name"])
    command = torch.tensor(CHECK_COMMAND, dtype=torch.float32)

    def resample(env_ids) -> None:
        # The env resamples at reset, then observes: the first observation carries the command.
        term.vel_command_b[env_ids] = command

    term._resample_command = resample
    obs, _ = wrapped.reset()
    sim = env.sim.data
    last = np.zeros(spec["actions"]["size"])
    worst_obs = worst_act = 0.0
    steps = 0
    for _ in range(CHECK_STEPS):
        data.qpos[:] = sim.qpos[0].cpu().numpy()
        data.qvel[:] = sim.qvel[0].cpu().numpy()
        mujoco.mj_forward(model, data)
        mine = observer(data, last, np.asarray(CHECK_COMMAND))
        theirs = obs["actor"][0].cpu().numpy()
        worst_obs = max(worst_obs, float(np.abs(mine - theirs).max()))
        with torch.inference_mode():
            actions = policy(obs)
        worst_act = max(worst_act, float(np.abs(onnx(theirs) - actions[0].cpu().numpy()).max()))
        last = actions[0].cpu().numpy().astype(float)
        obs, _, dones, _ = wrapped.step(actions)
        steps += 1
        if bool(dones.any()):
            break  # an untrained policy falls: the observation after a reset is another story
    if worst_obs > OBS_TOLERANCE:
        raise ExportError(f"the spec's observation differs from mjlab's by {worst_obs:.2e}")
    if worst_act > ACTION_TOLERANCE:
        raise ExportError(f"the ONNX actor differs from the torch one by {worst_act:.2e}")
    return {"check_steps": steps, "max_abs_obs_diff": worst_obs,
            "max_abs_action_diff": worst_act}  # fmt: skip


def _export(env, wrapped, runner, policy, request: ExportRequest, task: str, data: dict,
            run_dir: Path) -> dict:  # fmt: skip
    import mujoco

    from mjlab_microduck.jobs import drive_spec
    from mjlab_microduck.runs import records

    xml, changes = drive_spec.portable_scene_xml(env)
    records.atomic_write_text(run_dir / SCENE_FILENAME, xml)
    model = mujoco.MjModel.from_xml_path(str(run_dir / SCENE_FILENAME))
    differences = drive_spec.model_differences(env.sim.mj_model, model, IGNORED_MODEL_FIELDS)
    if differences:
        field, value = next(iter(differences.items()))
        raise ExportError(f"the exported scene compiles to another model: {field} by {value:g}")
    from mjlab_microduck.tasks.registry import load_env_cfg

    spec = drive_spec.build_spec(env, model, task, _checkpoint_info(request.checkpoint, data),
                                 load_env_cfg(task, play=True))  # fmt: skip
    records.atomic_write_text(run_dir / SPEC_FILENAME, json.dumps(spec, indent=2) + "\n")
    _write_policy(runner, env, run_dir, request.checkpoint)
    summary = _self_check(env, wrapped, policy, run_dir)
    return {
        **summary,
        "obs_dim": spec["observation"]["size"],
        "action_dim": spec["actions"]["size"],
        "observation_terms": ",".join(t["name"] for t in spec["observation"]["terms"]),
        "timestep_s": spec["sim"]["timestep_s"],
        "decimation": spec["sim"]["decimation"],
        "heading_stiffness": spec["command"]["heading"]["stiffness"],
        "empty_defaults_dropped": changes["empty_defaults_dropped"],
        "policy_bytes": (run_dir / POLICY_FILENAME).stat().st_size,
        "scene_bytes": (run_dir / SCENE_FILENAME).stat().st_size,
        "mujoco_version": mujoco.__version__,
    }


def run(request: ExportRequest, out_root: Path = Path("logs/exports"), name: str | None = None):
    """Export ``request.checkpoint`` into a new run folder under ``out_root``; returns
    ``(run_dir, record)``. Bad input is an :class:`ExportError` before the folder exists."""
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper

    from mjlab_microduck.runs import records
    from mjlab_microduck.runtime.capture import held_output
    from mjlab_microduck.tasks.registry import list_tasks, load_rl_cfg, load_runner_cls

    name = default_name(request.checkpoint) if name is None else name
    try:
        names.check_run_name(name)
    except ValueError as err:
        raise ExportError(str(err)) from None
    data = replay.load_checkpoint(Path(request.checkpoint))
    task = resolved_task(request)
    if task not in list_tasks():
        raise ExportError(f"unknown task {task!r}; known: {', '.join(list_tasks())}")
    started_iso, started = records.utc_now_iso(), time.monotonic()
    # What mjlab and Warp print while the env is built is passed on; the runner's printout of
    # its networks is not (the record names the checkpoint).
    with held_output((2,), echo=True):
        env = ManagerBasedRlEnv(cfg=_env_cfg(task), device="cpu")
    try:
        wrapped = RslRlVecEnvWrapper(env)
        with held_output((1, 2)):
            runner = (load_runner_cls(task) or MjlabOnPolicyRunner)(
                wrapped, asdict(load_rl_cfg(task)), device="cpu"
            )
        try:
            runner.alg.actor.load_state_dict(data["actor_state_dict"], strict=True)
        except RuntimeError as err:
            lines = str(err).strip().splitlines()
            detail = next((ln.strip() for ln in lines if "size mismatch" in ln), lines[-1])
            raise ExportError(
                f"checkpoint {request.checkpoint} does not fit task {task}: {detail}"
            ) from None
        policy = runner.get_inference_policy(device="cpu")
        run_dir = records.new_run_dir(out_root, name)
        try:
            summary = _export(env, wrapped, runner, policy, request, task, data, run_dir)
            config = recording.checkpoint_config(request)
            config["task"] = task
            kinds = {POLICY_FILENAME: "policy", SCENE_FILENAME: "scene", SPEC_FILENAME: "spec"}
            record = recording.write_finished_record(
                run_dir, "export", config, "cpu", started_iso, started, summary,
                [records.artifact(run_dir / f, run_dir, k) for f, k in kinds.items()],
            )  # fmt: skip
        except BaseException:
            # An export folder holds all three files and an ok record, or does not exist.
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
    finally:
        env.close()
    return run_dir, record


def publish(run_dir: Path, dest: Path):
    """Copy a finished export (its three files and record) to ``dest`` (e.g. ``book/results``)."""
    from mjlab_microduck.runs import records

    def copy_files(record, staging: Path):
        for art in record.artifacts:
            records.atomic_copy(Path(run_dir) / art.path, staging / art.path)
        return list(record.artifacts)

    return records.publish_run(run_dir, dest, copy_files, kind="export")
