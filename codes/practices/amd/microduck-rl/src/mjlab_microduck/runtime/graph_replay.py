"""Replay a Python function's PyTorch work as one captured graph, keeping Python's view of it.

Problem: on a GPU the CPU launches every PyTorch operator one by one; a function of hundreds
of small operators (mjlab's reward and termination managers) costs the CPU far more than the
GPU. A CUDA graph launches the lot at once, but it replays kernels only: Python does not run,
so whatever the function does to Python objects happens once, at capture. Three things a
manager's call does to Python must therefore be redone after every replay, and one must be
undone before it:

* a tensor attribute or dict entry the call *rebinds* (``self.peak = torch.where(...)``) must
  point at the graph's result again (``rebound``);
* a tensor the graph *reads* may have been rebound by code outside since the capture
  (``env.episode_length_buf = ...``): its current value is copied into the one the graph reads
  (``inputs``);
* other attributes the call sets (a sensor's cache and its ``valid`` flag) and dict entries it
  writes (``env.extras["log"][...]``) are set again (``effects``).

A call is graph-safe only if those effects are the same on every call: :class:`GraphedCall`
watches its warm-up calls and keeps a call eager, with the reason, when a plain value it sets
changes from call to call (a counter), or when the capture reads a value back to the host or
copies Python data to the device (a Python list used as an index).

Backends: :class:`CudaGraph` captures with ``torch.cuda.CUDAGraph`` on CUDA and HIP devices;
:class:`RecordedOps` is its CPU stand-in, which records every operator at PyTorch's
dispatcher and replays the list on the same tensors, with Python frozen as a GPU graph freezes
it. Comparing :class:`RecordedOps` with plain calls on a CPU, value for value, tests the
bookkeeping above without a GPU.

No-op: importing this module does nothing; it imports nothing from the package but
:mod:`mjlab_microduck.runtime.dispatch_count`.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from mjlab_microduck.runtime.dispatch_count import (
    copies_to_device,
    reads_host,
    reads_host_tensor,
)

PLAIN = (bool, int, float, str, type(None))
"""Attribute values compared by value; anything else (but tensors) is compared by type."""


class GraphUnsafe(RuntimeError):
    """The function cannot be replayed from a graph (the message says why). ``ran`` says
    whether the call itself already ran (its ``output`` then stands), as under
    :class:`RecordedOps`, or nothing ran, as in a failed CUDA capture."""

    def __init__(self, message: str, ran: bool = False, output: Any = None) -> None:
        super().__init__(message)
        self.ran = ran
        self.output = output


# --------------------------------------------------------------------------- backends


class _DispatchWatch:
    """Inside ``with``: every operator torch dispatches goes through :meth:`dispatch`, which
    runs it (``func(*args, **kwargs)``) and returns its result."""

    def dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        from torch.utils._python_dispatch import TorchDispatchMode

        watch = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                return watch.dispatch(func, args, kwargs or {})

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)


class HostTraffic(_DispatchWatch):
    """Inside ``with``: the operators that a CUDA capture would refuse, each as "<operator>
    reads a value back to the host at <file:line>" or "... copies Python data to the device
    at ...", in ``problems``; ``nodes`` holds every operator dispatched, with its arguments and
    result. ``why()`` is the first problem and their count, or None. ``host_tensors`` notes
    each operator that takes a tensor in host memory beside device tensors ("<operator> at
    <file:line>"): PyTorch reads it at launch, so a graph may keep the value it had at capture
    or read a buffer freed since; a capture accepts it, so it is noted, not refused."""

    def __init__(self) -> None:
        self.nodes: list[tuple[Any, tuple, dict, Any]] = []
        self.problems: list[str] = []
        self.host_tensors: list[str] = []

    def dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        if reads_host(str(func), args):
            self.problems.append(f"{func} reads a value back to the host at {_caller()}")
        if reads_host_tensor((args, kwargs)):
            self.host_tensors.append(f"{func} at {_caller()}")
        out = func(*args, **kwargs)
        if copies_to_device(str(func), out):
            self.problems.append(f"{func} copies Python data to the device at {_caller()}")
        self.nodes.append((func, args, kwargs, out))
        return out

    def why(self) -> str | None:
        if not self.problems:
            return None
        return f"{self.problems[0]} ({len(self.problems)} such operators)"


class RecordedOps:
    """CPU stand-in for a CUDA graph: the operators one call dispatched, replayed in order on
    the same tensors. A functional operator's result is copied into the tensor the call made,
    so later operators (and Python) read it there, as they read a graph's memory."""

    def capture(self, fn: Callable[[], Any]) -> tuple[Any, Any]:
        with HostTraffic() as traffic:
            output = fn()  # runs once, for real: the call's own effect
        if (why := traffic.why()) is not None:
            raise GraphUnsafe(why, ran=True, output=output)
        return traffic.nodes, output

    def replay(self, graph: Any) -> None:
        import torch
        from torch.utils._pytree import tree_flatten

        for func, args, kwargs, recorded in graph:
            fresh = func(*args, **kwargs)
            for old, new in zip(tree_flatten(recorded)[0], tree_flatten(fresh)[0], strict=True):
                if isinstance(old, torch.Tensor) and new.data_ptr() != old.data_ptr():
                    old.copy_(new)


class OpWitness(_DispatchWatch):
    """Inside ``with``: the tensors the operators take as arguments, by identity (``read``;
    each held, so that no identity is reused by a later tensor while the block runs), the last
    operator dispatched and, when one raises, which one and where in the code outside torch it
    was called (``where``). A failed capture says "operation not permitted when stream is
    capturing"; this says which operator and line."""

    def __init__(self) -> None:
        self.read: dict[int, Any] = {}
        self.last: str | None = None
        self.failed: str | None = None

    def dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch
        from torch.utils._pytree import tree_flatten

        self.last = str(func)
        for arg in tree_flatten((args, kwargs))[0]:
            if isinstance(arg, torch.Tensor):
                self.read[id(arg)] = arg
        try:
            return func(*args, **kwargs)
        except RuntimeError:
            if self.failed is None:
                self.failed = f"{func} at {_caller()}"
            raise

    def where(self) -> str:
        if self.failed is not None:
            return f" ({self.failed})"
        return f" (after {self.last})" if self.last is not None else ""


def _caller() -> str:
    """``file:line`` of the innermost frame outside torch and this module."""
    import traceback

    for frame in reversed(traceback.extract_stack()):
        name = frame.filename.replace("\\", "/")
        if "/torch/" not in name and frame.filename != __file__:
            return f"{name.rsplit('/', 2)[-2]}/{name.rsplit('/', 1)[-1]}:{frame.lineno}"
    return "?"


class CudaGraph:
    """``torch.cuda.CUDAGraph`` capture on ``device`` (the env's: a capture records only the
    capturing device's stream, so a call whose tensors live on another GPU would run once at
    capture and never again), each graph in a memory pool of its own. Graphs that share a
    pool are safe only replayed in the order they were captured: one graph's scratch memory
    may be another's output, still read. The calls of an env step are captured at the steps
    their warm-ups end and replayed in the step's own order (the actions once per physics
    substep), so they do not share. Capture records without running, so :meth:`capture`
    replays once for the call itself."""

    def __init__(self, device: Any = None) -> None:
        self.device = device  # None: the current device

    def capture(self, fn: Callable[[], Any]) -> tuple[Any, Any]:
        import torch

        graph = torch.cuda.CUDAGraph()
        witness = OpWitness()
        try:
            with torch.cuda.device(self.device), torch.cuda.graph(
                graph, capture_error_mode="thread_local"  # no pool given: a private one
            ), witness:
                output = fn()
        except RuntimeError as error:  # an operator that syncs, copies from the host, ...
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise GraphUnsafe(f"capture failed: {first}{witness.where()}{self._unstick_rng()}"
                              ) from error
        graph.replay()
        return graph, output

    def replay(self, graph: Any) -> None:
        graph.replay()

    def _unstick_rng(self) -> str:
        """A capture that fails part-way can leave the device's random generator in capture
        mode, and every random draw after it then fails ("Offset increment outside graph
        capture"). If a draw fails so, give the generator a copy of its own state (seed and
        offset, out of capture mode). What it did, to append to the eager reason: nothing
        (draws work), the reset, or that the generator is still stuck."""
        import torch

        def draws() -> bool:
            try:
                torch.empty(1, device="cuda").uniform_()
                return True
            except RuntimeError as error:
                if "graph capture" not in str(error):
                    raise
                return False

        with torch.cuda.device(self.device):
            if draws():
                return ""
            generator = torch.cuda.default_generators[torch.cuda.current_device()]
            generator.graphsafe_set_state(generator.clone_state())
            if draws():
                return "; the device's random generator was reset"
            return "; the device's random generator is stuck in capture mode"


def backend_for(device: str, emulate: bool = False) -> RecordedOps | CudaGraph | None:
    """The graph backend for ``device``: CUDA graphs where torch has them for that device
    (CUDA and HIP builds), the recorded stand-in when ``emulate``, else None (stay eager)."""
    if emulate:
        return RecordedOps()
    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return CudaGraph(torch.device(device))
    return None


# --------------------------------------------------------------------------- Python state

Path = tuple[Any, ...]  # attribute names and dict keys from the root, in order


def reachable(root: Any, owns: Callable[[Any], bool]) -> dict[Path, Any]:
    """Objects reachable from ``root`` through attributes, dicts, lists and tuples, however
    deep, of which ``owns(obj)`` holds (dicts count as owned), each under the shortest path to
    it. Lists and tuples are walked but not owned (their items have no name to be rebound
    under)."""
    import torch

    found: dict[Path, Any] = {}
    seen: set[int] = set()
    todo: deque[tuple[Any, Path]] = deque([(root, ())])
    while todo:
        obj, path = todo.popleft()  # breadth first: the shortest path names an object
        if id(obj) in seen or isinstance(obj, torch.Tensor):
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            found[path] = obj
            children = [(value, (*path, key)) for key, value in obj.items()]
        elif isinstance(obj, (list, tuple)):
            children = [(value, (*path, index)) for index, value in enumerate(obj)]
        elif owns(obj) and hasattr(obj, "__dict__"):
            found[path] = obj
            children = [(value, (*path, name)) for name, value in vars(obj).items()]
        else:
            continue
        todo.extend(children)
    return found


def resolve(root: Any, path: Path) -> Any:
    """The object at ``path`` from ``root`` now (a dict or an attribute may have been replaced
    since the path was found); raises LookupError when the path no longer leads anywhere."""
    obj = root
    for step in path:
        try:
            obj = obj[step] if isinstance(obj, (dict, list, tuple)) else getattr(obj, step)
        except (KeyError, IndexError, AttributeError, TypeError) as error:
            raise LookupError(f"{'.'.join(map(str, path))} is gone") from error
    return obj


def _items(obj: Any) -> list[tuple[Any, Any]]:
    return list(obj.items()) if isinstance(obj, dict) else list(vars(obj).items())


def _put(obj: Any, key: Any, value: Any) -> None:
    if isinstance(obj, dict):
        obj[key] = value
    else:
        setattr(obj, key, value)


def _undo(objects: dict[Path, Any], before: dict[Slot, Any]) -> None:
    """Put back the slots of ``objects`` that changed since ``before`` and drop the ones made
    since: only those, as an object may refuse any assignment (mjlab's ``WarpBridge`` refuses
    every attribute, to keep the addresses its own CUDA graphs read)."""
    now = snapshot(objects)
    for path, name in [*changes(before, now), *(before.keys() - now.keys())]:
        obj = objects[path]
        if (path, name) in before:
            _put(obj, name, before[(path, name)])
        elif isinstance(obj, dict):
            del obj[name]
        else:
            delattr(obj, name)


def _get(obj: Any, key: Any) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


Slot = tuple[Path, Any]  # (path of the owning object, attribute name or dict key)


def snapshot(objects: dict[Path, Any]) -> dict[Slot, Any]:
    """Every attribute and entry of ``objects``, by slot."""
    return {(path, key): value for path, obj in objects.items() for key, value in _items(obj)}


def changes(before: dict[Slot, Any], after: dict[Slot, Any]) -> dict[Slot, Any]:
    """The slots ``after`` holds another object or plain value in (or holds anew)."""
    return {
        slot: value
        for slot, value in after.items()
        if slot not in before or not _same(before[slot], value)
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, PLAIN) and isinstance(b, PLAIN):
        return type(a) is type(b) and a == b
    return a is b


def _signature(changed: dict[Slot, Any]) -> dict[Slot, Any]:
    """What a call's changes look like, to compare calls: plain values by value, the rest by
    type (a fresh tensor or cache object every call is the same effect)."""
    return {slot: (v if isinstance(v, PLAIN) else type(v)) for slot, v in changed.items()}


class AttributeWrites:
    """Inside ``with``: every attribute set on ``objects`` (by ``self.x = ...``), as
    ``(id(obj), name)`` in ``written``, whether or not the value changed. Each class of the
    objects gets a recording ``__setattr__`` for the block, put back afterwards."""

    def __init__(self, objects: list[Any]) -> None:
        self.ids = {id(obj) for obj in objects}
        self.classes = list(dict.fromkeys(type(obj) for obj in objects
                                          if not isinstance(obj, dict)))  # fmt: skip
        self.written: set[tuple[int, str]] = set()
        self._saved: list[tuple[type, Any]] = []

    def __enter__(self) -> AttributeWrites:
        for cls in self.classes:
            own = cls.__dict__.get("__setattr__")
            original = cls.__setattr__

            def record(obj: Any, name: str, value: Any, _original: Any = original) -> None:
                if id(obj) in self.ids:
                    self.written.add((id(obj), name))
                _original(obj, name, value)

            try:
                cls.__setattr__ = record
            except TypeError:  # a class that refuses new attributes (a C type) is not watched
                continue
            self._saved.append((cls, own))
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, own in reversed(self._saved):
            if own is None:
                del cls.__setattr__
            else:
                cls.__setattr__ = own
        self._saved.clear()


# --------------------------------------------------------------------------- the call


@dataclass
class Captured:
    """One graph of a call and what to do around its replay."""

    graph: Any
    output: Any
    inputs: list[tuple[Slot, Any]]  # the tensor the graph reads, by the slot it was in
    rebound: list[tuple[Slot, Any]]  # the graph's tensor the call left in a slot
    effects: list[tuple[Slot, Any]]  # any other value the call left in a slot
    fresh_output: tuple[bool, ...] = ()  # per tensor of the output: one the graph made


@dataclass
class GraphedCall:
    """``fn()`` eager for ``warmup`` calls per key, then replayed from a captured graph.

    ``root`` and ``owns`` name the Python objects whose state the call reads and writes: those
    reachable from ``root`` of which ``owns`` holds, however deep. ``key()`` names the Python
    values the call's arithmetic depends on (reward weights, say): each key gets its own graph.
    After a :class:`GraphUnsafe` the call stays eager, and ``unsafe`` says why.

    What no bookkeeping can see is a branch on Python state that differs from call to call (a
    step counter, a cache filled or not): a replay takes the branch the capture took. Compare
    replays with plain calls on a CPU (:class:`RecordedOps`) before trusting a new function.
    """

    fn: Callable[[], Any]
    root: Any
    owns: Callable[[Any], bool]
    backend: Any
    key: Callable[[], Hashable] = lambda: None
    warmup: int = 3
    graphs: dict[Hashable, Captured] = field(default_factory=dict)
    calls: dict[Hashable, int] = field(default_factory=dict)
    replays: int = 0
    unsafe: str | None = None
    _last_effect: dict[Hashable, dict] = field(default_factory=dict)
    _set_plain: dict[Hashable, set] = field(default_factory=dict)

    def objects(self) -> dict[Path, Any]:
        return reachable(self.root, self.owns)

    def __call__(self) -> Any:
        if self.unsafe is not None:
            return self.fn()
        key = self.key()
        captured = self.graphs.get(key)
        if captured is not None:
            return self._replay(captured)
        done = self.calls.get(key, 0)
        if done < self.warmup:
            self.calls[key] = done + 1
            return self._watched(key, last=done + 1 == self.warmup)
        return self._capture(key)

    def _watched(self, key: Hashable, last: bool = False) -> Any:
        """An eager call whose effects on plain values must match the previous call's. The
        ``last`` before the capture must also dispatch only operators a capture accepts (the
        first calls may fill caches from Python once): a capture that fails part-way can leave
        the device in capture state (its random generator), so none is attempted on a call
        that reads from the host or copies to the device."""
        objects = self.objects()
        before = snapshot(objects)
        with (HostTraffic() if last else contextlib.nullcontext() as traffic,
              AttributeWrites(list(objects.values())) as writes):
            output = self.fn()
        if traffic is not None and self.unsafe is None and (why := traffic.why()) is not None:
            self.unsafe = why
        after = snapshot(objects)
        effect = _signature(changes(before, after))
        previous = self._last_effect.get(key, {})
        # A slot set on both calls to other plain values is a counter (a ring buffer's write
        # position), which a replay would freeze. A slot set on one call only is a lazy cache
        # filled once, or a value already in place: a replay leaves both as they are.
        differ = sorted(str(slot[1]) for slot in set(previous) & set(effect)
                        if previous[slot] != effect[slot])  # fmt: skip
        if differ:
            self.unsafe = f"it sets other values on every call ({', '.join(differ[:3])})"
        self._last_effect[key] = effect
        # every plain attribute the call sets, changed or not (a flag it sets to the value it
        # held): a replay must set it again
        paths = {id(obj): path for path, obj in objects.items()}
        self._set_plain.setdefault(key, set()).update(
            slot for obj_id, name in writes.written
            if isinstance(after.get(slot := (paths[obj_id], name)), PLAIN))  # fmt: skip
        return output

    def _capture(self, key: Hashable) -> Any:
        import torch
        from torch.utils._pytree import tree_flatten

        objects = self.objects()
        before = snapshot(objects)
        try:
            with OpWitness() as witness:
                graph, output = self.backend.capture(self.fn)
        except GraphUnsafe as error:
            self.unsafe = str(error)
            if error.ran:
                return error.output
            _undo(objects, before)  # nothing ran: undo Python's half
            return self.fn()
        after = snapshot(objects)
        changed = changes(before, after)
        # A flag a watched call set (a sensor's cache marked stale) may already hold that
        # value when the capture runs, so the capture sees no change; the call still sets it,
        # and so must every replay, after code outside has set it otherwise.
        changed.update({slot: after[slot] for slot in self._set_plain.get(key, ())
                        if slot not in changed and isinstance(after.get(slot), PLAIN)})
        inputs = [(slot, value) for slot, value in before.items()
                  if isinstance(value, torch.Tensor) and id(value) in witness.read]  # fmt: skip
        rebound = [(s, v) for s, v in changed.items() if isinstance(v, torch.Tensor)]
        effects = [(s, v) for s, v in changed.items() if not isinstance(v, torch.Tensor)]
        existing = {id(v) for v in before.values() if isinstance(v, torch.Tensor)}
        fresh = tuple(isinstance(leaf, torch.Tensor) and id(leaf) not in existing
                      for leaf in tree_flatten(output)[0])  # fmt: skip
        captured = Captured(graph, output, inputs, rebound, effects, fresh)
        self.graphs[key] = captured
        return self._hand_out(captured)

    def _hand_out(self, captured: Captured) -> Any:
        """Put the call's Python effects back and return its output. A tensor the graph made is
        handed out as a copy, as a plain call hands out a fresh tensor each time and holders
        of the last one (a log dict kept for the iteration's means) keep theirs; the graph's
        own memory stays the graph's. An output of several tensors (a dict of observation
        groups) is handed out as a new one, and a slot the call left it in (the manager's
        cache of its last output) holds what was handed out."""
        from torch.utils._pytree import tree_flatten, tree_unflatten

        for (path, name), tensor in captured.rebound:
            _put(resolve(self.root, path), name, tensor.clone())
        leaves, spec = tree_flatten(captured.output)
        output = captured.output
        if any(captured.fresh_output):
            copies = [leaf.clone() if fresh else leaf
                      for leaf, fresh in zip(leaves, captured.fresh_output, strict=True)]
            output = tree_unflatten(copies, spec)
        for (path, name), value in captured.effects:
            _put(resolve(self.root, path), name, output if value is captured.output else value)
        return output

    def _replay(self, captured: Captured) -> Any:
        try:
            for (path, name), tensor in captured.inputs:
                current = _get(resolve(self.root, path), name)
                if current is not tensor:
                    if current.shape != tensor.shape or current.dtype != tensor.dtype:
                        raise GraphUnsafe(f"{name} was replaced by a tensor of another shape")
                    tensor.copy_(current)
        except (GraphUnsafe, LookupError, KeyError, AttributeError) as error:
            self.unsafe = f"before a replay: {error}"
            self.graphs.clear()
            return self.fn()  # nothing replayed yet
        self.backend.replay(captured.graph)
        self.replays += 1
        return self._hand_out(captured)
