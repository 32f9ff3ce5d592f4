"""mjlab's termination and reward managers (and, by choice, the rest of an env step that can be)
replayed from captured graphs on an NVIDIA GPU.

Problem: after the physics substeps, mjlab computes terminations and rewards from hundreds of
small PyTorch operators per env step (about 550 for the MicroDuck walker), each a kernel the
CPU launches on a GPU; the GPU work is tiny, the launching is not. A CUDA graph launches them
all at once.

Fix: ``TerminationManager.compute`` and ``RewardManager.compute`` run through
:class:`mjlab_microduck.runtime.graph_replay.GraphedCall`, one per manager: eager for three
calls, then captured and replayed, with the Python state the terms keep (a reward term's peak
heights, a sensor's cache, the episode log's metrics) put back after every replay. The graph
is keyed by the managers' weights and plain term parameters, so a curriculum that changes a
weight gets a new graph. mjlab's terms index entity data by Python lists of ids
(``data.site_pos_w[:, asset_cfg.site_ids]``), which a GPU copies from host memory on every call
and a capture refuses; under the hook each term gets its own copy of its ``SceneEntityCfg`` with
those lists as the slices that select the same entries (:func:`slice_term_ids`). A manager
whose call still cannot be replayed (a host read, a copy from the host, effects that differ
from call to call) stays eager and says why in :func:`status`.

A term that branches on Python state that changes between steps (a step counter) would
replay the branch taken at capture: the tests compare the walker's replays with plain calls on
a CPU, step for step and through a training, and a new task deserves the same check
(``MICRODUCK_MANAGER_GRAPHS=emulate``). One such branch is known and keyed: a sensor computes
its data afresh or reads its cache, so each state of the sensors' cache flags gets its own
graph (:func:`sensor_flags`). ``MICRODUCK_GRAPH_SCOPE=step`` (:data:`SCOPES`) also replays the
observation manager, the actions and the scene's writes and updates of every physics substep;
their delay buffers must then keep their write position still, which ``buffer_syncs`` does
(with mjlab's own buffers the watched calls see the position move and stay eager, a test).

``MICRODUCK_MANAGER_GRAPHS`` picks the mode. ``auto`` (the default) is on where torch is a CUDA
build with a GPU, where the graphs were measured to give the plain calls' values and to take a
fifth off the walker's training iteration on an H200 (chapter 11); it is a no-op on a CPU and on
a HIP build, where no ROCm run has measured them yet. ``1`` turns them on wherever torch has
graphs for the env's device (CUDA or HIP; eager elsewhere), ``0`` off, and ``emulate`` runs the
recorded CPU stand-in on any device, to check on a CPU that replays give the plain calls' values.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import os
import weakref
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus
from mjlab_microduck.runtime import graph_replay

FIX = "manager_graphs"
ENV_VAR = "MICRODUCK_MANAGER_GRAPHS"
MODES = ("auto", "0", "1", "emulate")
DEFAULT_MODE = "auto"
REPORT_PREFIX = "[microduck] manager_graphs: "
"""The line a trainer ends with when the hook is on (:func:`report_line`)."""
CALL_ATTR = "_microduck_graphed_call"  # per manager instance: its GraphedCall, or None (eager)

_state = _hook.HookState(FIX, {"managers": 0, "sliced_ids": 0})
_calls: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def mode() -> str:
    """The requested mode from :data:`ENV_VAR` (:data:`DEFAULT_MODE` when unset); ValueError on
    another."""
    value = os.environ.get(ENV_VAR, DEFAULT_MODE)
    if value not in MODES:
        raise ValueError(f"{ENV_VAR}={value!r}: expected one of {', '.join(MODES)}")
    return value


def auto_reason() -> str | None:
    """Why ``auto`` leaves the graphs off on this machine, or None where it turns them on (a
    CUDA build of torch that sees a GPU)."""
    import torch

    if getattr(torch.version, "hip", None):
        return "a HIP build of torch: no ROCm run has measured the graphs yet (=1 turns them on)"
    if not torch.cuda.is_available():
        return "no GPU for torch: nothing to replay"
    return None


def owns(obj: Any) -> bool:
    """The objects whose state a manager's call may read and write: mjlab's and the package's."""
    return (type(obj).__module__ or "").startswith("mjlab")


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, graph_replay.PLAIN)


def term_key(manager: Any) -> Hashable:
    """The plain values the manager's arithmetic depends on: each term's weight (rewards) and
    its plain parameters, as a curriculum may change them between calls."""
    return tuple(
        (getattr(cfg, "weight", None),
         tuple(sorted((k, v) for k, v in cfg.params.items() if _plain(v))))
        for cfg in getattr(manager, "_term_cfgs", ())
    )  # fmt: skip


def _graphed(original: Callable[..., Any]) -> Callable[..., Any]:
    attr = f"{CALL_ATTR}_{original.__name__}"  # one call per method of the object

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = self.__dict__.get(attr, False)
        if call is False:
            call = self.__dict__[attr] = _new_call(self, original)
        if call is None:
            return original(self, *args, **kwargs)
        call.arguments = (args, kwargs)
        return call()

    return _hook.mark_wrapper(method, FIX, original)


def sensor_flags(scene: Any) -> tuple[bool, ...]:
    """Whether each sensor of ``scene`` holds its data computed (mjlab's ``_cache_valid``). A
    call that reads a sensor branches on it: it computes the data afresh or reads the cache
    (after a reset, observations compute it; between resets, they read what the rewards left),
    so each state of the flags gets its own graph."""
    return tuple(bool(getattr(sensor, "_cache_valid", False))
                 for sensor in getattr(scene, "_sensors", {}).values())  # fmt: skip


ID_FIELDS = ("joint_ids", "body_ids", "geom_ids", "site_ids", "actuator_ids", "tendon_ids")
"""The id fields of mjlab's ``SceneEntityCfg`` a term indexes entity data with."""


def as_slice(ids: Any) -> slice | None:
    """The slice that selects what the id list ``ids`` selects (one id, or ids ascending by a
    constant step), else None. Indexing by a Python list copies the list to the GPU on every
    call, which a CUDA capture refuses; a slice is a view and copies nothing."""
    if not isinstance(ids, list) or not ids or not all(type(i) is int and i >= 0 for i in ids):
        return None
    step = ids[1] - ids[0] if len(ids) > 1 else 1
    if step <= 0 or any(b - a != step for a, b in itertools.pairwise(ids)):
        return None
    return slice(ids[0], ids[-1] + step, step)


def slice_term_ids(manager: Any) -> int:
    """Give each of the manager's terms its own copy of any ``SceneEntityCfg`` parameter, with
    the id lists that :func:`as_slice` can express as slices; returns how many lists it
    replaced. The copies are the terms' own: no other manager sees them."""
    replaced = 0
    for cfg in getattr(manager, "_term_cfgs", ()):
        for name, value in list(cfg.params.items()):
            if not dataclasses.is_dataclass(value):
                continue
            slices = {f: s for f in ID_FIELDS if (s := as_slice(getattr(value, f, None)))}
            if slices:
                cfg.params[name] = dataclasses.replace(value, **slices)
                replaced += len(slices)
    return replaced


def _new_call(owner: Any, original: Callable[..., Any]) -> Any:
    # a manager reaches everything through its env; the scene is its own root
    root = getattr(owner, "_env", owner)
    scene = getattr(root, "scene", root)
    backend = graph_replay.backend_for(str(root.device), emulate=mode() == "emulate")
    if backend is None:
        return None
    _state.counts["sliced_ids"] += slice_term_ids(owner)

    def fn() -> Any:
        args, kwargs = call.arguments
        return original(owner, *args, **kwargs)

    def key() -> Hashable:
        args, kwargs = call.arguments
        return (args, tuple(sorted(kwargs.items())), term_key(owner), sensor_flags(scene))

    call = graph_replay.GraphedCall(fn=fn, root=root, owns=owns, backend=backend, key=key)
    call.arguments = ((), {})
    # named by its class, and by its method where that is not ``compute``
    call.manager = type(owner).__name__ + (
        "" if original.__name__ == "compute" else f".{original.__name__}")
    _calls[id(call)] = call
    _state.counts["managers"] += 1
    return call


SCOPE_VAR = "MICRODUCK_GRAPH_SCOPE"
_MANAGERS = (("mjlab.managers.termination_manager", "TerminationManager", "compute"),
             ("mjlab.managers.reward_manager", "RewardManager", "compute"))
SCOPES = {
    "managers": _MANAGERS,
    "step": (*_MANAGERS,
             ("mjlab.managers.observation_manager", "ObservationManager", "compute"),
             ("mjlab.managers.action_manager", "ActionManager", "apply_action"),
             ("mjlab.scene.scene", "Scene", "write_data_to_sim"),
             ("mjlab.scene.scene", "Scene", "update")),
}  # fmt: skip
"""What the hook replays. ``managers`` (the default): the termination and reward managers, the
scope measured on an H200. ``step``: also the observation manager, the actions applied every
physics substep, and the scene's writes and updates around each substep, every call of an env
step that neither reads the GPU back nor draws env ids (commands, events, resets and the
raycasts still run eager); its replays give the plain calls' values on a CPU (the tests), and
what it buys on a GPU is for a bench to measure."""
DEFAULT_SCOPE = "managers"


def scope() -> str:
    """The requested scope from :data:`SCOPE_VAR` (:data:`DEFAULT_SCOPE` when unset);
    ValueError on another."""
    value = os.environ.get(SCOPE_VAR, DEFAULT_SCOPE)
    if value not in SCOPES:
        raise ValueError(f"{SCOPE_VAR}={value!r}: expected one of {', '.join(SCOPES)}")
    return value


def _targets(names: tuple[tuple[str, str, str], ...]) -> tuple[tuple[type, str], ...]:
    import importlib

    return tuple((getattr(importlib.import_module(module), cls), method)
                 for module, cls, method in names)  # fmt: skip


def install(targets: tuple[tuple[type, str], ...] | None = None) -> HookStatus:
    """Wrap the calls of :data:`SCOPES` when :data:`ENV_VAR` asks for graphs. Idempotent.

    Test seam: ``targets``, as (class, method) pairs (default: those of :func:`scope`)."""
    if _state.active():
        return _state.active()
    try:
        requested = mode()
        chosen = scope()
    except ValueError as error:  # commands that take the variable refuse it (train's check)
        return _state.set(False, f"{error}; left off", {})
    details: dict[str, Any] = {"mode": requested, "scope": chosen}
    if requested == "0":
        return _state.set(False, f"off ({ENV_VAR}=0): the managers launch every operator",
                          details)  # fmt: skip
    if requested == "auto" and (why := auto_reason()) is not None:
        return _state.set(False, f"off ({ENV_VAR}=auto): {why}", details)
    if targets is None:
        targets = _targets(SCOPES[chosen])
    for cls, method in targets:
        _state.patches.replace(cls, method, _graphed(getattr(cls, method)))
    details["calls"] = [f"{c.__module__}.{c.__qualname__}.{m}" for c, m in targets]
    how = ("the recorded CPU stand-in on every device" if requested == "emulate"
           else "CUDA graphs where torch has them for the env's device")  # fmt: skip
    what = ("termination and reward managers" if chosen == "managers" else
            "termination, reward and observation managers, actions and scene updates")
    return _state.set(True, f"{what} replayed from graphs ({how})", details)


def uninstall() -> None:
    _state.reset()
    _calls.clear()


@contextlib.contextmanager
def installed(requested: str, chosen: str | None = None) -> Iterator[None]:
    """The hook installed in mode ``requested`` (and scope ``chosen``, or the one set) inside;
    the variables and the hook as they were after."""
    names = (ENV_VAR, SCOPE_VAR)
    kept = {var: os.environ.get(var) for var in names}
    os.environ[ENV_VAR] = requested
    if chosen is not None:
        os.environ[SCOPE_VAR] = chosen
    uninstall()
    install()
    try:
        yield
    finally:
        uninstall()
        for var, value in kept.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        install()


def status() -> HookStatus:
    calls = list(_calls.values())
    return _state.report(
        replays=sum(c.replays for c in calls),
        graphs=sum(len(c.graphs) for c in calls),
        eager={f"{c.manager}": c.unsafe for c in calls if c.unsafe is not None},
    )


def report_line() -> str | None:
    """One line saying what the hook did in this process (graphs captured, replays, managers
    left eager and why), for a trainer's log; None when the hook is off."""
    current = status()
    if not current.active:
        return None
    details = current.details
    what = {key: details.get(key, 0) for key in ("graphs", "replays", "managers")}
    return REPORT_PREFIX + json.dumps({**what, "scope": details.get("scope", DEFAULT_SCOPE),
                                       "eager": details.get("eager", {})})  # fmt: skip


def read_report(lines: list[str]) -> dict[str, Any]:
    """The last :func:`report_line` among ``lines`` as flat record keys
    (``manager_graphs.graphs``, ``manager_graphs.eager.<manager>``, ...); {} without one."""
    found = [line for line in lines if line.startswith(REPORT_PREFIX)]
    if not found:
        return {}
    report = json.loads(found[-1][len(REPORT_PREFIX):])
    flat = {f"{FIX}.{key}": report[key] for key in ("graphs", "replays", "managers")}
    if "scope" in report:  # lines written before the scope existed name none
        flat[f"{FIX}.scope"] = report["scope"]
    flat.update({f"{FIX}.eager.{name}": why for name, why in report["eager"].items()})
    return flat
