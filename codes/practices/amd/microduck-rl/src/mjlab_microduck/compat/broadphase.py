"""Recompute the broadphase every HIP step, whatever shape the ROCm fork's cache takes.

Problem: the ROCm MuJoCo Warp fork ("AMD Opt 5") keeps the broadphase result of the first
``collision()`` call on the ``Data`` object when the current Warp device is HIP, and reuses that
candidate-pair context on every later step; only the narrowphase runs again. The reuse happens
after ``_zero_nacon_ncollision`` has reset ``d.ncollision`` to 0, and mujoco_warp's narrowphase
stops at that count, so after the first step nothing is a candidate: a robot dropped a few
centimetres at reset falls through the floor while training carries on with finite numbers.

The fork has moved this cache between commits (read from ``mujoco_warp/_src/collision_driver.py``;
the pinned commit 9229bb9 is not in any searchable index):
  * ROCm/mujoco_warp 7215199606ef: unconditional on HIP, attributes ``d._static_collision_ctx``
    and ``d._static_cache_valid``;
  * ROCm/mujoco_warp f1bb46ee40fa: opt-in, module flag ``_BROADPHASE_CACHE_ENABLED`` read from
    ``MJW_HIP_BROADPHASE_CACHE`` (default "0"), attribute ``d._bvh_cached_ctx``;
  * zhihuidu-amd/mujoco_warp 28a3a23d855b (a public copy of the fork): ``d._bvh_cached_ctx``
    unconditional on HIP, next to ``d._collision_ctx``, a context preallocated for hipGraph
    pointer stability that ``collision()`` only reads.
A check for fixed attribute names in ``collision.__code__`` (this hook's first version) stays off
when a revision keeps the cache in a helper or under a new name, which is exactly the silent
failure chapter 2 is about. So this hook decides by behaviour:

1. It reads the whole collision module's source and collects every private attribute that any of
   its functions *assigns* on a ``Data`` argument (``d.X = ...``, ``setattr(d, "X", ...)``); names
   only read there (such as ``_collision_ctx``) are buffers, not caches, and are left alone.
2. It watches the ``Data`` object: an undeclared attribute that ``collision()`` creates or rebinds
   during a HIP call is a cache too, learned at run time.
3. Before every HIP call it deletes every such attribute that the ``Data`` object holds, so the
   fork runs its broadphase as on the first step.
4. It wraps the module's public broadphase functions (``nxn_broadphase``, ``sap_broadphase``) to
   count them, and checks after every HIP call with contacts enabled that one of them ran. A HIP
   step without a broadphase means a cache this hook cannot reach (for example one kept outside
   the ``Data`` object): that is reported as *unrecognised*, warned about once, and the contact
   check decides whether contacts work.

The report distinguishes ``none`` (no cache in this mujoco_warp), ``disabled`` (the cache exists
but its switch is off), ``neutralised`` (the cache exists and this hook clears it) and
``unrecognised`` (see 4, or a module-level cache store, or no broadphase function to watch).
Throughput drops a little (the broadphase has to follow the robot), which is correct.

Guard: installed when there is HIP evidence (Warp ``+rocm`` build, ``torch.version.hip``, a HIP
Warp device) or the module source shows a cache. Off HIP every wrapper passes straight through;
with upstream mujoco_warp 3.8.1 on CPU/CUDA nothing is patched and the status says so.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import warnings
from collections.abc import MutableMapping, MutableSequence, MutableSet
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus

FIX = "broadphase"
# Parameter names (or the annotation) under which mujoco_warp functions take the Data object.
DATA_PARAM_NAMES = ("d", "data")
DATA_ANNOTATION = "Data"

STATE_NONE = "none"
STATE_DISABLED = "disabled"
STATE_NEUTRALISED = "neutralised"
STATE_UNRECOGNISED = "unrecognised"
STATE_LABELS = {
    STATE_NONE: "no cache in this mujoco_warp",
    STATE_DISABLED: "cache present, disabled",
    STATE_NEUTRALISED: "cache present, neutralised by the hook",
    STATE_UNRECOGNISED: "unrecognised cache shape",
}


@dataclass
class ModuleScan:
    """What the collision module's source says about a broadphase cache."""

    module: str
    source_read: bool
    cache_attrs: set[str] = field(default_factory=set)  # assigned on a Data argument
    read_only_attrs: set[str] = field(default_factory=set)  # only read there (left alone)
    cache_flags: dict[str, bool] = field(default_factory=dict)  # module bools naming a cache
    foreign_caches: set[str] = field(default_factory=set)  # module-level cache containers
    broadphase_functions: list[str] = field(default_factory=list)

    def details(self) -> dict[str, Any]:
        return {
            "collision_module": self.module,
            "source_read": self.source_read,
            "cache_attrs_in_source": sorted(self.cache_attrs),
            "read_only_attrs_in_source": sorted(self.read_only_attrs),
            "cache_flags": dict(self.cache_flags),
            "module_level_caches": sorted(self.foreign_caches),
            "broadphase_functions": list(self.broadphase_functions),
        }


@dataclass
class _Runtime:
    """Live evidence from HIP calls since install."""

    scan: ModuleScan | None = None
    learned_attrs: set[str] = field(default_factory=set)
    warned: bool = False


_state = _hook.HookState(
    FIX,
    {
        "hip_calls": 0,
        "hip_calls_checked": 0,
        "hip_calls_without_broadphase": 0,
        "invalidations": 0,
        "broadphase_calls": 0,
    },
)
_patches = _state.patches
_counts = _state.counts
_runtime = _Runtime()


# --- reading the module ----------------------------------------------------------------------


@functools.cache
def _declared_fields(cls: Any) -> frozenset[str]:
    """Field names a Data class declares (dataclass fields and annotations), never caches.
    Cached per class: the collision wrapper asks on every HIP step."""
    if not isinstance(cls, type):
        return frozenset()
    names: set[str] = set()
    if dataclasses.is_dataclass(cls):
        names.update(f.name for f in dataclasses.fields(cls))
    for klass in cls.__mro__:
        names.update(getattr(klass, "__annotations__", {}) or {})
    return frozenset(names)


def _is_data_param(arg: ast.arg) -> bool:
    if arg.arg in DATA_PARAM_NAMES:
        return True
    ann = arg.annotation
    name = getattr(ann, "id", None) or getattr(ann, "attr", None)
    return name == DATA_ANNOTATION


def _constant_name(node: ast.AST, module: ModuleType) -> str | None:
    """A string given literally or through a module-level string constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        if isinstance(value, str):
            return value
    return None


def _scan_source(tree: ast.AST, module: ModuleType, scan: ModuleScan) -> None:
    read: set[str] = set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = func.args
        params = {
            a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if _is_data_param(a)
        }
        if not params:
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                if node.value.id in params and private:
                    if isinstance(node.ctx, ast.Store | ast.Del):
                        scan.cache_attrs.add(node.attr)
                    else:
                        read.add(node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "getattr", "hasattr", "delattr")
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in params
            ):
                name = _constant_name(node.args[1], module)
                if name is None or not name.startswith("_"):
                    continue
                (scan.cache_attrs if node.func.id == "setattr" else read).add(name)
    scan.read_only_attrs = read - scan.cache_attrs


def _code_strings(code: Any) -> set[str]:
    names = set(code.co_names) | {c for c in code.co_consts if isinstance(c, str)}
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_strings(const)
    return names


def scan_module(module: ModuleType) -> ModuleScan:
    """Read ``module`` (the collision driver) for cache attributes, switches and stores."""
    scan = ModuleScan(module=module.__name__, source_read=False)
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        source = None
    if source is not None:
        try:
            _scan_source(ast.parse(textwrap.dedent(source)), module, scan)
            scan.source_read = True
        except SyntaxError:
            pass
    if not scan.source_read:
        # No source file (a zipped or compiled install): fall back to the names in the code
        # objects, keeping private, cache-like ones that are not module globals.
        for value in vars(module).values():
            fn = inspect.unwrap(value) if callable(value) else None
            code = getattr(fn, "__code__", None)
            if code is None or getattr(fn, "__module__", None) != module.__name__:
                continue
            for name in _code_strings(code):
                if name.startswith("_") and "cache" in name.lower() and name not in vars(module):
                    scan.cache_attrs.add(name)
    scan.cache_attrs -= _declared_fields(getattr(module, DATA_ANNOTATION, None))
    for name, value in vars(module).items():
        if "cache" not in name.lower():
            continue
        if isinstance(value, bool):
            scan.cache_flags[name] = value
        elif isinstance(value, MutableMapping | MutableSequence | MutableSet):
            scan.foreign_caches.add(name)
    scan.broadphase_functions = sorted(
        name
        for name, value in vars(module).items()
        if name.endswith("broadphase")
        and not name.startswith("_")
        and callable(value)
        and not isinstance(value, type)
    )
    return scan


def cache_markers(collision_fn: Any) -> set[str]:
    """Cache attribute names that the module defining ``collision_fn`` assigns on ``Data``."""
    fn = inspect.unwrap(_hook.unwrap_ours(collision_fn))
    module = inspect.getmodule(fn)
    return set(scan_module(module).cache_attrs) if module is not None else set()


# --- the wrappers ----------------------------------------------------------------------------


def _data_device(data: Any) -> Any:
    qpos = getattr(data, "qpos", None)
    return getattr(qpos, "device", None)


def _contacts_enabled(m: Any, d: Any, collision_module: ModuleType) -> bool:
    """False when ``collision()`` returns before its broadphase by design (no contact buffer,
    or contacts/constraints disabled), so a missing broadphase call proves nothing."""
    if getattr(d, "naconmax", 1) == 0:
        return False
    flags = getattr(getattr(m, "opt", None), "disableflags", 0) or 0
    bits = getattr(collision_module, "DisableBit", None)
    if bits is not None:
        mask = int(getattr(bits, "CONSTRAINT", 0)) | int(getattr(bits, "CONTACT", 0))
        return not (int(flags) & mask)
    return True


def _undeclared(d: Any, declared: frozenset[str]) -> dict[str, int]:
    held = getattr(d, "__dict__", None) or {}
    return {k: id(v) for k, v in held.items() if k.startswith("_") and k not in declared}


def _warn_once(message: str) -> None:
    if not _runtime.warned:
        _runtime.warned = True
        warnings.warn(f"mjlab_microduck.compat.broadphase: {message}", RuntimeWarning, 3)


def _wrap_collision(original: Any, collision_module: ModuleType) -> Any:
    @functools.wraps(original)
    def collision(m: Any, d: Any) -> Any:
        # The fork decides on the current device; the data's device is checked too in case a
        # caller steps HIP data outside a ScopedDevice.
        if not (
            _hook.device_is_hip(_hook.current_warp_device()) or _hook.device_is_hip(_data_device(d))
        ):
            return original(m, d)
        _counts["hip_calls"] += 1
        declared = _declared_fields(type(d))
        drop = (_runtime.scan.cache_attrs if _runtime.scan else set()) | _runtime.learned_attrs
        held = getattr(d, "__dict__", None) or {}
        dropped = [name for name in drop if name in held and name not in declared]
        for name in dropped:
            delattr(d, name)
        if dropped:
            _counts["invalidations"] += 1
        before = _undeclared(d, declared)
        calls_before = _counts["broadphase_calls"]
        result = original(m, d)
        after = _undeclared(d, declared)
        # Whatever collision() hung on (or re-bound on) the Data object is step-to-step state.
        _runtime.learned_attrs.update(k for k, v in after.items() if before.get(k) != v)
        if _contacts_enabled(m, d, collision_module):
            _counts["hip_calls_checked"] += 1
            if _counts["broadphase_calls"] == calls_before:
                _counts["hip_calls_without_broadphase"] += 1
                _warn_once(
                    "a HIP collision step ran no broadphase although the hook had dropped every "
                    f"cache it knows ({sorted(drop) or 'none'}); this mujoco_warp keeps its cache "
                    "where the hook cannot reach it. Run the contact check "
                    "(microduck contact-check --device cuda:0 --require-hip): it decides."
                )
        return result

    return _hook.mark_wrapper(collision, FIX, original)


def _wrap_broadphase(original: Any) -> Any:
    @functools.wraps(original)
    def broadphase(*args: Any, **kwargs: Any) -> Any:
        _counts["broadphase_calls"] += 1
        return original(*args, **kwargs)

    return _hook.mark_wrapper(broadphase, FIX, original)


# --- install, state, report ------------------------------------------------------------------


def install(
    *,
    hip_platform: bool | None = None,
    collision_module: ModuleType | None = None,
    package_module: ModuleType | None = None,
) -> HookStatus:
    """Wrap the collision driver when HIP is present or its source shows a cache. Idempotent.

    ``hip_platform`` overrides HIP detection (tests); ``collision_module`` defaults to
    ``mujoco_warp._src.collision_driver`` and ``package_module`` to ``mujoco_warp`` (whose
    ``collision`` re-export is wrapped too if it is the same function).
    """
    if _state.active():
        return _state.active()
    if collision_module is None:
        from mujoco_warp._src import collision_driver as collision_module  # type: ignore
    if package_module is None:
        import mujoco_warp as package_module  # type: ignore[no-redef]
    facts = _hook.platform_facts()
    on_hip = facts.hip if hip_platform is None else hip_platform
    scan = scan_module(collision_module)
    _runtime.scan = scan
    details: dict[str, Any] = {"platform": facts.summary(), "hip_platform": on_hip}
    details.update(scan.details())
    collision = getattr(collision_module, "collision", None)
    cache_in_source = bool(scan.cache_attrs or scan.foreign_caches)
    if collision is None or not (on_hip or cache_in_source):
        _state.set(False, _reason(installed=False, on_hip=on_hip), details)
        return _state.status
    wrapped: list[str] = []
    wrapper = _wrap_collision(_hook.unwrap_ours(collision), collision_module)
    _patches.replace(collision_module, "collision", wrapper)
    wrapped.append(f"{collision_module.__name__}.collision")
    if getattr(package_module, "collision", None) is collision:
        _patches.replace(package_module, "collision", wrapper)
        wrapped.append(f"{package_module.__name__}.collision")
    for name in scan.broadphase_functions:
        original = getattr(collision_module, name)
        if not _hook.is_our_wrapper(original, FIX):
            _patches.replace(collision_module, name, _wrap_broadphase(original))
            wrapped.append(f"{collision_module.__name__}.{name} (counted)")
    details["wrapped"] = wrapped
    # The reason reads the installed state, so it is filled in once the status exists.
    installed = _state.set(True, "", details)
    installed.reason = _reason(installed=True, on_hip=on_hip)
    return installed


def _static_problem(scan: ModuleScan | None, on_hip: bool) -> str | None:
    if scan is None:
        return None
    if scan.foreign_caches:
        return (
            f"module-level cache store(s) {sorted(scan.foreign_caches)} outside the Data object, "
            "which the hook cannot clear"
        )
    if on_hip and not scan.broadphase_functions:
        return "no public *_broadphase function to watch, so the hook cannot verify a step"
    return None


def cache_state() -> tuple[str, str]:
    """``(state, verdict)``: one of none / disabled / neutralised / unrecognised, and why."""
    status = _state.status
    scan = _runtime.scan
    if status is None or scan is None:
        return STATE_NONE, "not installed"
    on_hip = bool(status.details.get("hip_platform"))
    checked = _counts["hip_calls_checked"]
    stale = _counts["hip_calls_without_broadphase"]
    known = sorted(scan.cache_attrs | _runtime.learned_attrs)
    if stale:
        return STATE_UNRECOGNISED, (
            f"{stale} of {checked} HIP collision steps ran no broadphase after the hook dropped "
            f"{known or 'nothing'}: a cache the hook cannot reach; the contact check decides"
        )
    problem = _static_problem(scan, on_hip or _counts["hip_calls"] > 0)
    if problem:
        return STATE_UNRECOGNISED, f"{problem}; the contact check decides"
    evidence = (
        f"broadphase ran on all {checked} HIP steps checked"
        if checked
        else "no HIP step observed yet (the contact check steps one)"
    )
    if not known:
        return STATE_NONE, f"no cache attribute in the source or on Data; {evidence}"
    flags_off = scan.cache_flags and not any(scan.cache_flags.values())
    if flags_off and not _runtime.learned_attrs and not _counts["invalidations"]:
        flags = ", ".join(f"{k}={v}" for k, v in sorted(scan.cache_flags.items()))
        return STATE_DISABLED, f"cache {known} switched off ({flags}); {evidence}"
    return STATE_NEUTRALISED, (
        f"cache {known} dropped before every HIP step ({_counts['invalidations']} times so far); "
        f"{evidence}"
    )


def _reason(*, installed: bool, on_hip: bool) -> str:
    state, verdict = cache_state() if installed else (STATE_NONE, "")
    if not installed:
        return (
            "no broadphase cache in this collision driver (upstream mujoco_warp) and no HIP "
            "evidence: it already recomputes the broadphase every step"
        )
    where = "on HIP" if on_hip else "on HIP steps (none expected here: no HIP evidence)"
    return f"{STATE_LABELS[state]}; fresh broadphase forced {where}: {verdict}"


def uninstall() -> None:
    _state.reset()
    _runtime.scan = None
    _runtime.learned_attrs.clear()
    _runtime.warned = False


def status() -> HookStatus:
    """Status with live counters and the current cache state (``details["cache_state"]``)."""
    if _state.status is None:
        return _state.report()
    state, verdict = cache_state()
    report = _state.report(
        cache_state=state,
        cache_state_label=STATE_LABELS[state],
        verdict=verdict,
        cache_attrs_learned=sorted(_runtime.learned_attrs),
    )
    if _state.status.active:
        report.reason = _reason(installed=True, on_hip=bool(report.details.get("hip_platform")))
    return report
