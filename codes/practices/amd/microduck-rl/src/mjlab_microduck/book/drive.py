"""The drive page and chapter 6's sim-to-sim: which checkpoint the book drives, its export, and
the plain-MuJoCo numbers beside MuJoCo Warp's.

Problem it solves: the page (``book/drive/``) and chapter 6 must drive the book's walker once it
is published (``book/results/walker.json`` names its checkpoint) and, until then, the closest
published checkpoint (:data:`FALLBACK_CHECKPOINT`), labelled as such. Both read the same export
(``microduck export``): a published one in ``book/results`` whose record names the checkpoint's
SHA-256, else one made on this machine under ``logs/exports`` (:func:`export_folder` makes it if
there is none; a test says that it should be published).

No-op cases: importing reads nothing; torch and mjlab are imported only to make a missing export.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mjlab_microduck.analysis import gait
from mjlab_microduck.runs import records

WALKER_JSON = "walker.json"
FALLBACK_CHECKPOINT = "h200_walker_resume_s42/model_550.pt"
"""Until a walker is published: WALKER seed 42 at iteration 550, the checkpoint the walker issue
found walking every straight line under the heading command (it fails the stand case), published
with its gait test (``h200_walker_gait_s42_model_550``)."""
EXPORT_FILES = ("policy.onnx", "scene.xml", "spec.json")
ABOUT_FILENAME = "about.json"
SIM2SIM_CASES = tuple(c for c in gait.CASES if not c.push_mps)
"""Every gait-test case but the push (a shove the plain rollout does not give)."""


@dataclass(frozen=True)
class BookPolicy:
    """The checkpoint the book drives: ``walker`` when walker.json names it."""

    checkpoint: Path
    task: str | None
    walker: bool

    @property
    def label(self) -> str:
        where = f"{self.checkpoint.parent.name}/{self.checkpoint.name}"
        if self.walker:
            return f"{where}, the book's walker"
        return f"{where}, the closest published checkpoint (not a walker yet)"


def _results(results_root: str | Path | None) -> Path:
    if results_root is not None:
        return Path(results_root)
    from mjlab_microduck.book import results

    return results.results_root()


def book_policy(results_root: str | Path | None = None) -> BookPolicy:
    """walker.json's checkpoint (a path relative to the results folder, or to the repository)
    when the walker is published, else :data:`FALLBACK_CHECKPOINT`; a named file that does not
    exist is an error, never a silent fallback."""
    root = _results(results_root)
    walker = root / WALKER_JSON
    if not walker.is_file():
        return BookPolicy(root / FALLBACK_CHECKPOINT, None, walker=False)
    entry = json.loads(walker.read_text())
    named = Path(entry["checkpoint"])
    for candidate in (named, root / named, root.parent.parent / named):
        if candidate.is_file():
            return BookPolicy(candidate, entry.get("task"), walker=True)
    raise FileNotFoundError(f"{walker}: checkpoint {named} is not there")


def find_export(checkpoint: Path, roots: list[Path]) -> Path | None:
    """The first ok export record under ``roots`` (in that order, newest first within a root)
    made from ``checkpoint``'s bytes."""
    digest = records.sha256_file(checkpoint)
    for root in roots:
        if not Path(root).is_dir():
            continue
        for folder, record in reversed(records.find_records(root)):
            if (record.kind == "export" and record.status == "ok"
                    and record.config.get("checkpoint_sha256") == digest):  # fmt: skip
                return folder
    return None


def local_exports_root() -> Path:
    from mjlab_microduck.book import results

    root = results.repo_root()
    return (root if root is not None else Path.cwd()) / "logs" / "exports"


def export_folder(results_root: str | Path | None = None, make: bool = True) -> Path:
    """The export the book uses: published in the results folder, else made here (``make``)."""
    policy = book_policy(results_root)
    local = local_exports_root()
    found = find_export(policy.checkpoint, [_results(results_root), local])
    if found is not None:
        return found
    if not make:
        raise FileNotFoundError(f"no export of {policy.checkpoint}: run `microduck export` on it")
    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
    from mjlab_microduck.jobs import export

    run_dir, _ = export.run(export.ExportRequest(policy.checkpoint, policy.task), local)
    return run_dir


def training_seed(checkpoint: Path) -> int | None:
    """The seed of the training that saved ``checkpoint``, from the run record beside it
    (``None`` when there is none, or it names no seed)."""
    beside = checkpoint.parent / records.RECORD_FILENAME
    if not beside.is_file():
        return None
    seed = records.load_record(beside).config.get("seed")
    if isinstance(seed, dict):  # train.record_config: {"env": seed, "agent": seed}
        seed = seed.get("env")
    return int(seed) if seed is not None else None


def write_drive_files(dest: str | Path, results_root: str | Path | None = None) -> Path:
    """The export's three files and ``about.json`` (what the page says it drives, with the
    training seed where known: :func:`training_seed`) in ``dest``, each written atomically;
    returns the export folder they came from."""
    policy = book_policy(results_root)
    folder = export_folder(results_root)
    record = records.load_record(folder)
    records.verify_artifacts(record, folder)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in EXPORT_FILES:
        source = (folder / name).read_bytes()
        if not (dest / name).is_file() or (dest / name).read_bytes() != source:
            records.atomic_write_bytes(dest / name, source)
    about = {
        "label": policy.label,
        "walker": policy.walker,
        "checkpoint": f"{policy.checkpoint.parent.name}/{policy.checkpoint.name}",
        "seed": training_seed(policy.checkpoint),
        "export_run": record.run_id,
        "published": folder.parent.resolve() == _results(results_root).resolve(),
    }
    text = json.dumps(about, indent=2) + "\n"
    if not (dest / ABOUT_FILENAME).is_file() or (dest / ABOUT_FILENAME).read_text() != text:
        records.atomic_write_text(dest / ABOUT_FILENAME, text)
    return folder


# --------------------------------------------------------------------------- sim-to-sim


def warp_gait_record(checkpoint: Path, results_root: str | Path | None = None) -> Path | None:
    """The published MuJoCo Warp gait test of ``checkpoint``: a gait-test record whose
    checkpoint path holds the run id of the training record beside ``checkpoint`` and the same
    file name (the gait tests ran on the training machine's copy); of several (a full-size test
    on a GPU, a ci-size one on a CPU), the one with the most robots."""
    beside = checkpoint.parent / records.RECORD_FILENAME
    if not beside.is_file():
        return None
    run_id = records.load_record(beside).run_id
    found = []
    for folder, record in records.find_records(_results(results_root)):
        path = str(record.config.get("checkpoint", ""))
        if record.kind == "gait_test" and run_id in path and path.endswith("/" + checkpoint.name):
            found.append((int(record.summary.get("num_envs") or 0), folder))
    return max(found)[1] if found else None


def _measure(case: gait.GaitCase) -> tuple[str, str]:
    """The column a case is judged by and how the table names it."""
    if case.kind == "linear":
        return "progress_ratio", "progress / command"
    if case.kind in ("turn", "walk_turn"):
        return "yaw_ratio", "yaw rate / command"
    return "displacement_m", "moved (m)"


MODE_TEXT = {gait.OPEN_LOOP_MODE: "yaw rate held at 0", gait.HEADING_MODE: "heading held"}


def _with_modes(warp: pd.DataFrame) -> pd.DataFrame:
    """A gait test's robots with a ``mode`` column. A record from before the heading mode held
    every yaw-rate command: its zero-yaw rows ran open loop, its turns as the heading mode's."""
    if "mode" in warp.columns:
        return warp
    mode = warp["ang_vel_z"].map(lambda wz: gait.OPEN_LOOP_MODE if wz == 0 else gait.HEADING_MODE)
    return warp.assign(mode=mode)


OPEN_LOOP_HEADING_COLUMNS = (
    "open loop: Warp median |Δheading| (rad)",
    "open loop: plain |Δheading| (rad)",
)
"""The heading change of the zero-yaw cases without the heading law (yaw rate held at 0), where
the robot's own asymmetry shows: Warp's median robot and the plain robot."""


def sim2sim_table(plain: pd.DataFrame, warp: pd.DataFrame) -> pd.DataFrame:
    """One row per case: MuJoCo Warp's robots (mean, min and max over every seed and robot) and
    the plain-MuJoCo robot in the same mode (the heading mode where Warp ran it, else open
    loop), on the number the gait test judges the case by; the plain robot in the other mode;
    and, for cases without a yaw command, the heading change open loop whatever the compared
    mode (:data:`OPEN_LOOP_HEADING_COLUMNS`). ``warp`` is a gait test's ``robots.csv``;
    ``plain`` is what ``jobs.plain_mujoco.run_cases`` returns."""
    warp = _with_modes(warp)
    rows = []
    for case in SIM2SIM_CASES:
        column, measure = _measure(case)
        here = warp[warp["case"] == case.name]
        mode = (
            gait.HEADING_MODE if (here["mode"] == gait.HEADING_MODE).any() else gait.OPEN_LOOP_MODE
        )
        w = here[here["mode"] == mode]
        mine = plain[plain["case"] == case.name]
        p = mine[mine["mode"] == mode]
        if p.empty:
            continue
        row = {"case": case.label, "measure": measure,
               "compared": MODE_TEXT[mode] if case.ang_vel_z == 0 else "yaw rate commanded",
               "plain MuJoCo": float(p[column].mean())}  # fmt: skip
        if not w.empty:
            row.update({"Warp mean": float(w[column].mean()), "Warp min": float(w[column].min()),
                        "Warp max": float(w[column].max())})  # fmt: skip
        if case.ang_vel_z == 0.0:
            other = mine[mine["mode"] != mode]
            if not other.empty:
                row["plain MuJoCo, other mode"] = float(other[column].mean())
            warp_open = here[here["mode"] == gait.OPEN_LOOP_MODE]["heading_change_rad"].abs()
            plain_open = mine[mine["mode"] == gait.OPEN_LOOP_MODE]["heading_change_rad"].abs()
            warp_column, plain_column = OPEN_LOOP_HEADING_COLUMNS
            if not warp_open.empty:
                row[warp_column] = float(warp_open.median())
            if not plain_open.empty:
                row[plain_column] = float(plain_open.max())
        rows.append(row)
    columns = ["case", "measure", "compared", "Warp mean", "Warp min", "Warp max",
               "plain MuJoCo", "plain MuJoCo, other mode", *OPEN_LOOP_HEADING_COLUMNS]  # fmt: skip
    return pd.DataFrame(rows).reindex(columns=columns).set_index("case")


def outside_warp(table: pd.DataFrame) -> pd.DataFrame:
    """The rows where the plain-MuJoCo robot lies outside the range of Warp's robots, with how far
    (in the row's measure) from the nearest end of that range."""
    has = table.dropna(subset=["Warp min"])
    below = has["plain MuJoCo"] < has["Warp min"]
    above = has["plain MuJoCo"] > has["Warp max"]
    out = has[below | above].copy()
    low = out["plain MuJoCo"] - out["Warp min"]
    out["by"] = low.where(below[below | above], out["plain MuJoCo"] - out["Warp max"])
    return out[["measure", "compared", "Warp min", "Warp max", "plain MuJoCo", "by"]]


def _join(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


STALL_MEASURES = ("progress / command", "yaw rate / command")
"""The measures of :func:`sim2sim_table` that are a fraction of the command: a robot under
:data:`STALL_PROGRESS` of the command on one of them has stalled. ``moved (m)`` (stand) has no
command to fall short of."""


def _miss(measure: str, by: float) -> str:
    """How far a row misses Warp's range, in its own measure's unit."""
    if measure in STALL_MEASURES:
        return f"{abs(by):.3f} of the command"
    return f"{abs(by):.4f} m"


def outside_warp_finding(table: pd.DataFrame) -> str:
    """What :func:`outside_warp` finds in a :func:`sim2sim_table`, in one or two sentences: the
    cases on which the plain robot stalls (covers less than :data:`STALL_PROGRESS` of the
    command, on a measure of :data:`STALL_MEASURES`) although Warp's worst robot walked, then how
    far each other case lies outside the range of Warp's robots, in its own measure."""
    out = outside_warp(table)
    if out.empty:
        return "Every case lies within the range of Warp's robots."
    stalled = out[out["measure"].isin(STALL_MEASURES)
                  & (out["plain MuJoCo"] < STALL_PROGRESS)
                  & (out["Warp min"] >= STALL_PROGRESS)]  # fmt: skip
    rest = out.drop(index=stalled.index)
    sentences = []
    if not stalled.empty:
        plain = _join([f"{v:.2f}" for v in stalled["plain MuJoCo"]])
        worst = _join([f"{v:.2f}" for v in stalled["Warp min"]])
        sentences.append(
            f"In plain MuJoCo the nominal robot stalls at {_join(list(stalled.index))} ({plain} "
            f"of the command), where every Warp robot walked (the worst at {worst})."
        )
    every = "Every other case" if sentences else "Every case"
    if rest.empty:
        sentences.append(f"{every} lies within the range of Warp's robots.")
    else:
        misses = _join([f"{case} by {_miss(row['measure'], row['by'])}"
                        for case, row in rest.iterrows()])  # fmt: skip
        sentences.append(
            f"{every} lies within the range of Warp's robots or misses its nearest end: {misses}."
        )
    return " ".join(sentences)


def warp_robots(checkpoint: Path, results_root: str | Path | None = None) -> pd.DataFrame:
    """The robots of :func:`warp_gait_record` (empty, with the columns the table reads, when
    the checkpoint has no published gait test)."""
    folder = warp_gait_record(checkpoint, results_root)
    if folder is None:
        return pd.DataFrame(columns=["case", "mode", "ang_vel_z", "heading_change_rad"])
    return pd.read_csv(folder / "robots.csv")


def delay_sweep(folder: Path, delays: tuple[int, ...] = (0, 1, 2, 3)) -> pd.DataFrame:
    """The cases without a yaw command, heading held, with the actuator delay fixed at each of
    ``delays`` (physics steps): the number each case is judged by, one column per delay."""
    from mjlab_microduck.jobs import plain_mujoco

    cases = tuple(c for c in SIM2SIM_CASES if c.ang_vel_z == 0.0)
    step_ms = 1000 * plain_mujoco.load_spec(folder)["sim"]["timestep_s"]
    columns = {}
    for delay in delays:
        robots = plain_mujoco.run_cases(folder, cases, (gait.HEADING_MODE,), action_delay=delay)
        values = {}
        for case in cases:
            column, _ = _measure(case)
            values[case.label] = float(robots.loc[robots["case"] == case.name, column].mean())
        columns[f"{delay} ({delay * step_ms:g} ms)"] = values
    table = pd.DataFrame(columns)
    table.insert(0, "measure", [_measure(c)[1] for c in cases])
    table.columns.name = "actuator delay, physics steps"
    return table


def randomisation(task: str, scene_xml: Path) -> dict[str, str]:
    """What the task randomises at start-up (as text) beside the exported, nominal robot."""
    import mujoco

    from mjlab_microduck.robot.constants import FOOT_GEOMS
    from mjlab_microduck.tasks.registry import load_env_cfg

    events = load_env_cfg(task, play=True).events
    model = mujoco.MjModel.from_xml_path(str(scene_xml))
    foot = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, f"robot/{FOOT_GEOMS[0]}")
    friction = events["foot_friction"].params["ranges"]
    com = events["base_com"].params["ranges"][0]
    mass = events["body_mass"].params["ranges"]
    armature = events["joint_armature"].params["ranges"]
    return {
        "xml_friction": f"{model.geom_friction[foot][0]:g}",
        "friction": f"{friction[0]:g}–{friction[1]:g}",
        "com_mm": f"±{1000 * com[1]:g} mm",
        "mass": f"{mass[0]:g}–{mass[1]:g}",
        "armature": f"{armature[0]:g}–{armature[1]:g}",
    }


STALL_PROGRESS = 0.2
"""A robot that covers less than this fraction of its command (a line's progress, a turn's yaw
rate) has not walked."""


def stalls(sweep: pd.DataFrame) -> pd.DataFrame:
    """The linear cases of :func:`delay_sweep`, per delay: True where the robot stalls (covers
    less than :data:`STALL_PROGRESS` of the command)."""
    linear = sweep[sweep["measure"] == "progress / command"].drop(columns="measure")
    return linear < STALL_PROGRESS


def delay_effect(sweep: pd.DataFrame) -> pd.DataFrame:
    """The linear cases of :func:`delay_sweep`: the least and the most progress over the
    delays with the delay of each, the spread between them, and the delays at which the robot
    stalls (:func:`stalls`), ``"none"`` where it never does."""
    linear = sweep[sweep["measure"] == "progress / command"].drop(columns="measure")
    stalled = stalls(sweep)
    return pd.DataFrame({
        "least progress": linear.min(axis=1),
        "least at delay": linear.idxmin(axis=1),
        "most progress": linear.max(axis=1),
        "most at delay": linear.idxmax(axis=1),
        "spread": linear.max(axis=1) - linear.min(axis=1),
        "stalls at delay": [", ".join(stalled.columns[row]) or "none"
                            for row in stalled.to_numpy()],
    })  # fmt: skip


def delay_finding(sweep: pd.DataFrame) -> str:
    """What :func:`delay_effect` finds, in one or two sentences: where a straight line stalls
    (or that none does; a line that stalls at every delay is said so), and, among the lines
    that walk at some delay, the one the delay moves most and the one it moves least."""
    effect = delay_effect(sweep)
    always = stalls(sweep).all(axis=1)
    stalled = effect[effect["stalls at delay"] != "none"]
    if stalled.empty:
        first, last = sweep.columns[1], sweep.columns[-1]
        lead = (f"No straight line stalls at any actuator delay of the sweep, {first} to {last} "
                "physics steps.")  # fmt: skip
    else:
        lead = "; ".join(
            f"{case} stalls at every delay" if always[case]
            else f"{case} stalls at a delay of {row['stalls at delay']}"
            for case, row in stalled.iterrows()
        ) + "."  # fmt: skip
    # A line stalled at every delay is not one the delay moves little: it never walks.
    moved = effect[~always]
    if moved.empty:
        return lead
    top, low = moved["spread"].idxmax(), moved["spread"].idxmin()
    t, b = moved.loc[top], moved.loc[low]
    most = (f"The delay moves {top} most, from {t['least progress']:.2f} of the command at a "
            f"delay of {t['least at delay']} to {t['most progress']:.2f} at {t['most at delay']}")
    if low == top:
        return f"{lead} {most}."
    return (f"{lead} {most}, and {low} least ({b['least progress']:.2f} to "
            f"{b['most progress']:.2f}).")  # fmt: skip


def warp_modes(warp: pd.DataFrame) -> list[str]:
    """The modes a published Warp gait test (its ``robots.csv``) ran, as the sim-to-sim table
    compares them: none for a checkpoint without one; a record from before the heading mode
    counts its zero-yaw cases open loop and its turns as the heading mode's."""
    if warp.empty:
        return []
    return sorted(_with_modes(warp)["mode"].unique())


def export_facts(folder: Path) -> dict[str, object]:
    """What chapter 6 says of an export, as values for one table: its timing (timestep,
    decimation), the heading law's stiffness, the export's self-check (steps, largest
    observation and action differences), the nominal robot beside what each Warp robot draws
    (:func:`randomisation`), and each delay as training draws it and as the plain rollout fixes
    it (:func:`mjlab_microduck.jobs.plain_mujoco.typical_lag`)."""
    from mjlab_microduck.jobs import plain_mujoco

    spec = plain_mujoco.load_spec(folder)
    summary = records.load_record(folder).summary
    drawn = randomisation(spec["task"], folder / "scene.xml")
    actuator = spec["actions"]["delay_physics_steps"]
    imu = spec["observation"]["terms"][0]["delay_steps"]
    return {
        "physics timestep (s)": f"{spec['sim']['timestep_s']:g}",
        "physics steps per policy step": spec["sim"]["decimation"],
        "heading law stiffness": f"{spec['command']['heading']['stiffness']:g}",
        "self-check: steps of an mjlab rollout": summary["check_steps"],
        "self-check: largest observation difference": f"{summary['max_abs_obs_diff']:.0e}",
        "self-check: largest ONNX − torch action difference": (
            f"{summary['max_abs_action_diff']:.0e}"
        ),
        "sole friction of the exported robot": drawn["xml_friction"],
        "foot friction, drawn per Warp robot": drawn["friction"],
        "trunk centre of mass shift, drawn": drawn["com_mm"],
        "body mass scale, drawn": drawn["mass"],
        "joint armature scale, drawn": drawn["armature"],
        "actuator delay, physics steps: drawn in training / fixed": (
            f"{actuator[0]}–{actuator[1]} / {plain_mujoco.typical_lag(actuator)}"
        ),
        "IMU delay, policy steps: drawn in training / fixed": (
            f"{imu[0]}–{imu[1]} / {plain_mujoco.typical_lag(imu)}"
        ),
    }
