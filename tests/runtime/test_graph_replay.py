"""graph_replay: a function replayed from a captured graph (the recorded CPU stand-in) gives
the values and leaves the Python state that plain calls give and leave."""

from __future__ import annotations

import contextlib

import pytest
import torch

from mjlab_microduck.runtime import graph_replay
from mjlab_microduck.runtime.graph_replay import GraphedCall, RecordedOps


class Term:
    """A reward-like term: state rebound every call, a cache and a flag it sets, a log entry."""

    def __init__(self, env: Env) -> None:
        self.peak = torch.zeros(4)
        self.cache = None
        self.fresh = False
        self.env = env

    def __call__(self) -> torch.Tensor:
        height = self.env.height
        self.peak = torch.maximum(self.peak, height)  # rebinds: the next call reads the result
        self.cache = {"peak": self.peak * 2.0}
        self.fresh = True
        self.env.log["peak_mean"] = self.peak.mean()
        return self.peak - height


class Env:
    def __init__(self) -> None:
        self.height = torch.zeros(4)
        self.log: dict[str, torch.Tensor] = {}
        self.term = Term(self)


def owns(obj: object) -> bool:
    return isinstance(obj, (Env, Term))


def _drive(env: Env, call, steps: int = 9) -> list:
    """Steps with eager work between calls as an env does: a new height tensor (rebinding an
    input), a log dict replaced at a 'reset', the cache flag cleared."""
    generator = torch.Generator().manual_seed(3)
    seen = []
    for step in range(steps):
        env.height = torch.rand(4, generator=generator)  # rebound outside the call
        env.term.fresh = False
        if step % 4 == 3:
            env.log = {}
            env.term.peak[1] = 0.0  # an eager reset writes into the current state in place
        out = call()
        seen.append((out.clone(), env.term.peak.clone(), env.term.cache["peak"].clone(),
                     env.term.fresh, env.log.get("peak_mean")))  # fmt: skip
    return seen


def _equal(a: list, b: list) -> bool:
    return all(
        (isinstance(y, torch.Tensor) and torch.equal(x, y) if isinstance(x, torch.Tensor)
         else x == y)
        for row_a, row_b in zip(a, b, strict=True)
        for x, y in zip(row_a, row_b, strict=True)
    )


def test_replays_give_what_plain_calls_give_and_leave():
    plain_env = Env()
    plain = _drive(plain_env, plain_env.term)
    env = Env()
    call = GraphedCall(fn=env.term, root=env, owns=owns, backend=RecordedOps(), warmup=2)
    replayed = _drive(env, call)
    assert call.unsafe is None and call.replays == 9 - 3 and len(call.graphs) == 1
    assert _equal(plain, replayed)
    captured = call.graphs[None]
    assert sorted(slot[1] for slot, _ in captured.rebound) == ["peak", "peak_mean"]
    assert sorted(slot[1] for slot, _ in captured.effects) == ["cache", "fresh"]
    assert {slot[1] for slot, _ in captured.inputs} == {"height", "peak"}


def test_without_the_bookkeeping_a_replay_drifts():
    """The same graph replayed with nothing put back: the rebound state is lost."""
    plain_env = Env()
    plain = _drive(plain_env, plain_env.term)
    env = Env()
    backend = RecordedOps()
    state = {}

    def naive() -> torch.Tensor:
        if "graph" not in state:
            state["graph"], state["out"] = backend.capture(env.term)
            return state["out"]
        backend.replay(state["graph"])
        return state["out"]

    assert not _equal(plain, _drive(env, naive))


def test_a_new_key_gets_its_own_graph():
    env = Env()
    weight = {"value": 1.0}
    call = GraphedCall(fn=lambda: env.term() * weight["value"], root=env, owns=owns,
                       backend=RecordedOps(), key=lambda: weight["value"], warmup=1)  # fmt: skip
    outs = []
    for value in (1.0, 1.0, 2.0, 2.0, 2.0):
        weight["value"] = value
        env.height = torch.full((4,), value)
        outs.append(call().clone())
    assert sorted(call.graphs) == [1.0, 2.0] and call.replays == 1
    assert torch.equal(outs[-1], torch.zeros(4))


def test_a_host_read_keeps_the_call_eager_and_its_result_stands():
    env = Env()

    def reads() -> torch.Tensor:
        total = env.term()
        return total * 0 if bool(total.sum() > 100) else total

    call = GraphedCall(fn=reads, root=env, owns=owns, backend=RecordedOps(), warmup=1)
    env.height = torch.ones(4)
    call()
    env.height = torch.full((4,), 3.0)
    out = call()  # the capture: it ran once, for real
    assert torch.equal(out, torch.zeros(4)) and torch.equal(env.term.peak, torch.full((4,), 3.0))
    assert "reads a value back to the host" in call.unsafe and not call.graphs
    env.height = torch.full((4,), 5.0)
    assert torch.equal(call(), torch.zeros(4)) and call.replays == 0


class ReadOnly:
    """Shaped like mjlab's ``WarpBridge``: it refuses every assignment."""

    def __init__(self) -> None:
        object.__setattr__(self, "_struct", torch.zeros(2))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Cannot set attribute {name!r} on ReadOnly")


class FailedCapture:
    """A CUDA capture that fails part-way: the call's Python ran, none of its kernels did."""

    def capture(self, fn):  # noqa: ANN001, ANN201
        fn()
        raise graph_replay.GraphUnsafe("capture failed: operation not permitted when capturing")

    def replay(self, graph: object) -> None:
        raise AssertionError("nothing was captured")


def test_a_failed_capture_puts_back_only_what_it_changed_and_the_call_stays_eager():
    plain_env = Env()
    plain = _drive(plain_env, plain_env.term)
    env = Env()
    env.bridge = ReadOnly()  # unchanged by the call: a failed capture must leave it alone
    env.extra = {"kept": 1}
    call = GraphedCall(fn=env.term, root=env, backend=FailedCapture(), warmup=2,
                       owns=lambda obj: owns(obj) or isinstance(obj, ReadOnly))  # fmt: skip
    assert _equal(plain, _drive(env, call))
    assert call.unsafe == "capture failed: operation not permitted when capturing"
    assert call.replays == 0 and not call.graphs and env.extra == {"kept": 1}


class NeverCapture:
    """A CUDA-graph backend that must not be asked to capture."""

    def capture(self, fn):  # noqa: ANN001, ANN201
        raise AssertionError("a capture was attempted")

    def replay(self, graph: object) -> None:
        raise AssertionError("nothing was captured")


def test_no_capture_is_attempted_when_the_last_warm_up_reads_the_host():
    """A CUDA capture that fails part-way can leave the device's random generator in capture
    mode, so the warm-up call before it is checked as the CPU stand-in checks a capture."""
    plain_env, env = Env(), Env()

    def reads(env: Env) -> torch.Tensor:
        total = env.term()
        return total * 2.0 if bool(total.sum() > 100) else total

    plain = _drive(plain_env, lambda: reads(plain_env))
    call = GraphedCall(fn=lambda: reads(env), root=env, owns=owns, backend=NeverCapture(),
                       warmup=2)  # fmt: skip
    assert _equal(plain, _drive(env, call))
    assert "reads a value back to the host at " in call.unsafe
    assert "runtime/test_graph_replay.py:" in call.unsafe and call.replays == 0


def test_a_cache_filled_from_python_on_a_first_call_does_not_keep_the_call_eager():
    env = Env()
    cache: dict[str, torch.Tensor] = {}

    def scaled() -> torch.Tensor:
        if "scale" not in cache:
            cache["scale"] = torch.tensor([1.0, 2.0, 3.0, 4.0])  # once, from Python data
        return env.term() * cache["scale"]

    call = GraphedCall(fn=scaled, root=env, owns=owns, backend=RecordedOps(), warmup=2)
    for _ in range(4):
        env.height = torch.rand(4)
        call()
    assert call.unsafe is None and call.replays == 1


class StuckGenerator:
    """Shaped like a CUDA generator after a capture failed part-way: every draw raises until
    it is given a copy of its own state."""

    def __init__(self) -> None:
        self.stuck = True

    def clone_state(self) -> str:
        return "copy"

    def graphsafe_set_state(self, state: str) -> None:
        assert state == "copy"
        self.stuck = False


def _fake_device(monkeypatch, generator: StuckGenerator) -> None:
    class Draw:
        def uniform_(self) -> None:
            if generator.stuck:
                raise RuntimeError("Offset increment outside graph capture encountered "
                                   "unexpectedly.")  # fmt: skip

    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "default_generators", (generator,))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch, "empty", lambda *args, **kwargs: Draw())


def test_a_generator_left_in_capture_mode_is_reset_and_a_healthy_one_left_alone(monkeypatch):
    """CUDAGeneratorState::clone copies the seed and offsets only, so the copy is out of
    capture mode."""
    stuck = StuckGenerator()
    _fake_device(monkeypatch, stuck)
    backend = graph_replay.CudaGraph(torch.device("cuda", 0))
    assert backend._unstick_rng() == "; the device's random generator was reset"
    assert not stuck.stuck
    assert backend._unstick_rng() == ""  # draws work: nothing to do
    # a reset that does not take is said, not raised: the capture's own error stands
    monkeypatch.setattr(StuckGenerator, "graphsafe_set_state", lambda self, state: None)
    stuck.stuck = True
    assert backend._unstick_rng() == "; the device's random generator is stuck in capture mode"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda)")
def test_on_a_gpu_random_draws_work_after_a_capture_that_failed_part_way():
    backend = graph_replay.CudaGraph(torch.device("cuda", 0))
    x = torch.ones(4, device="cuda")

    def syncs() -> torch.Tensor:
        y = torch.rand(4, device="cuda") + x  # a random draw inside the capture
        return y * 2.0 if bool(y.sum() > 100) else y  # a host read: the capture fails here

    with pytest.raises(graph_replay.GraphUnsafe, match="capture failed"):
        backend.capture(syncs)
    assert torch.rand(4, device="cuda").shape == (4,)  # the generator draws again


def test_undo_puts_back_what_changed_drops_what_is_new_and_leaves_the_rest_alone():
    env = Env()
    env.bridge = ReadOnly()
    env.log = {"kept": torch.ones(1), "removed": torch.zeros(1)}
    objects = graph_replay.reachable(env, lambda obj: owns(obj) or isinstance(obj, ReadOnly))
    before = graph_replay.snapshot(objects)
    height, log = env.height, env.log
    env.height = torch.ones(4)  # rebound
    env.term.new_attribute = 1  # made
    del env.log["removed"]  # dropped
    env.log["new_key"] = torch.ones(1)  # made
    graph_replay._undo(objects, before)
    assert env.height is height and env.log is log and not hasattr(env.term, "new_attribute")
    assert sorted(env.log) == ["kept", "removed"]
    assert graph_replay.snapshot(objects).keys() == before.keys()


def test_a_python_list_index_keeps_the_call_eager_as_a_gpu_capture_would():
    """Indexing by a Python list builds the index from host data on every call (a copy to the
    GPU, which a CUDA capture refuses); a single number written into a buffer does not."""
    env = Env()
    buffer = torch.ones(4)

    def fills() -> torch.Tensor:
        buffer[:] = 0.0
        return env.term() + buffer

    def picks() -> torch.Tensor:
        return env.term()[[0, 2]]

    fill = GraphedCall(fn=fills, root=env, owns=owns, backend=RecordedOps(), warmup=1)
    pick = GraphedCall(fn=picks, root=env, owns=owns, backend=RecordedOps(), warmup=1)
    for _ in range(3):
        env.height = torch.rand(4)
        fill(), pick()
    assert fill.unsafe is None and fill.replays == 1
    assert "aten.lift_fresh.default copies Python data to the device at " in pick.unsafe
    assert "runtime/test_graph_replay.py:" in pick.unsafe and pick.replays == 0


def test_a_counter_keeps_the_call_eager():
    env = Env()
    counter = {"n": 0}

    def counts() -> torch.Tensor:
        env.term.calls = counter["n"] = counter["n"] + 1
        return env.term()

    call = GraphedCall(fn=counts, root=env, owns=owns, backend=RecordedOps(), warmup=3)
    for _ in range(5):
        call()
    assert call.unsafe and "calls" in call.unsafe and call.replays == 0 and counter["n"] == 5


def test_an_input_replaced_by_another_shape_falls_back_to_plain_calls():
    env = Env()
    call = GraphedCall(fn=env.term, root=env, owns=owns, backend=RecordedOps(), warmup=1)
    for _ in range(3):
        env.height = torch.rand(4)
        call()
    env.term.peak = torch.zeros(6)
    env.height = torch.ones(6)
    assert torch.equal(call(), torch.zeros(6))
    assert "another shape" in call.unsafe and not call.graphs


def test_reachable_finds_owned_objects_by_their_shortest_path_and_resolve_follows_it():
    env = Env()
    found = graph_replay.reachable(env, owns)
    assert found[()] is env and found[("term",)] is env.term and found[("log",)] is env.log
    env.log = {"x": torch.ones(1)}
    assert graph_replay.resolve(env, ("log",)) is env.log
    with pytest.raises(LookupError):
        graph_replay.resolve(env, ("missing", "path"))


def test_the_witness_names_the_operator_that_failed_and_the_line_that_called_it():
    witness = graph_replay.OpWitness()
    with pytest.raises(RuntimeError), witness:
        torch.zeros(2).sum()
        torch.zeros(2) + torch.zeros(3)  # the failing operator, on this line
    line = test_the_witness_names_the_operator_that_failed_and_the_line_that_called_it
    expected = f"runtime/test_graph_replay.py:{line.__code__.co_firstlineno + 4}"
    assert witness.where() == f" (aten.add.Tensor at {expected})"
    quiet = graph_replay.OpWitness()
    with quiet:
        torch.ones(1).neg()
    assert quiet.where() == " (after aten.neg.default)" and quiet.failed is None
    assert graph_replay.OpWitness().where() == ""


def test_backend_for_a_cpu_is_none_unless_emulated():
    assert graph_replay.backend_for("cpu") is None
    assert isinstance(graph_replay.backend_for("cpu", emulate=True), RecordedOps)


def test_a_cuda_graph_captures_on_the_envs_own_device(monkeypatch):
    # a capture records only the capturing device's stream: on a second GPU the current
    # device (the first) would leave the call out of the graph
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    backend = graph_replay.backend_for("cuda:1")
    assert isinstance(backend, graph_replay.CudaGraph)
    assert backend.device == torch.device("cuda", 1)


def test_each_cuda_graph_gets_a_memory_pool_of_its_own(monkeypatch):
    """Graphs that share a pool may overwrite each other's outputs unless replayed in capture
    order, which an env step's calls are not; torch stands in for CUDA here."""
    captures = []

    class FakeGraph:
        def replay(self) -> None:
            captures[-1]["replays"] += 1

    @contextlib.contextmanager
    def fake_graph(graph, pool=None, **kwargs):
        captures.append({"graph": graph, "pool": pool, "replays": 0, **kwargs})
        yield

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", fake_graph)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    backend = graph_replay.CudaGraph(torch.device("cuda", 0))
    first, _ = backend.capture(lambda: torch.ones(2))
    second, _ = backend.capture(lambda: torch.zeros(2))
    assert [c["pool"] for c in captures] == [None, None]  # None: the capture's private pool
    assert first is not second and [c["replays"] for c in captures] == [1, 1]
    assert {c["capture_error_mode"] for c in captures} == {"thread_local"}


class Sensor:
    """A sensor-like object whose update marks its cache stale, and a reader that fills it."""

    def __init__(self) -> None:
        self.raw = torch.zeros(3)
        self.cache_valid = False
        self.cache = torch.zeros(3)

    def update(self) -> None:
        self.raw.add_(1.0)
        self.cache_valid = False

    def data(self) -> torch.Tensor:
        if not self.cache_valid:
            self.cache = self.raw * 10.0
            self.cache_valid = True
        return self.cache


def test_a_flag_the_capture_found_already_set_is_set_again_on_every_replay():
    """Updates run several times between reads: the capture's update finds the flag already
    stale and changes nothing, yet every replay must leave it stale again, after a read filled
    the cache, or the next read returns the old data."""

    def drive(update) -> list[torch.Tensor]:
        seen = []
        for _ in range(6):
            for _ in range(4):  # four physics substeps, one read per step
                update()
            seen.append(sensor.data().clone())
        return seen

    sensor = Sensor()
    plain = drive(sensor.update)
    sensor = Sensor()
    call = GraphedCall(fn=lambda: sensor.update(), root=sensor,
                       owns=lambda o: isinstance(o, Sensor), backend=RecordedOps())  # fmt: skip
    replayed = drive(call)
    assert call.replays > 0 and call.unsafe is None
    assert [("cache_valid", False)] == [(slot[1], v) for slot, v in call.graphs[None].effects]
    assert all(torch.equal(a, b) for a, b in zip(plain, replayed, strict=True))


def test_a_dict_of_fresh_tensors_is_handed_out_anew_and_the_slot_caching_it_holds_it():
    """An observation manager returns a dict of new tensors and keeps it as its last output:
    each replay hands out a new dict of copies (an earlier step's stays as it was), and the
    manager's cache is that dict."""

    class Manager:
        def __init__(self) -> None:
            self.state = torch.arange(3.0)
            self.last = None

        def compute(self) -> dict[str, torch.Tensor]:
            self.state.add_(1.0)
            self.last = {"actor": self.state * 2.0, "critic": self.state + 0.5}
            return self.last

    manager = Manager()
    call = GraphedCall(fn=manager.compute, root=manager,
                       owns=lambda o: isinstance(o, Manager), backend=RecordedOps())  # fmt: skip
    outputs = [call() for _ in range(7)]
    assert call.replays == 3
    assert outputs[-1] is manager.last and outputs[-2] is not outputs[-1]
    for step, out in enumerate(outputs, start=1):  # each kept its own step's values
        assert torch.equal(out["actor"], (torch.arange(3.0) + step) * 2.0), step


def test_a_host_tensor_beside_device_tensors_is_noted_where_a_capture_would_freeze_it():
    """A CPU tensor used with a device tensor is read when the operator launches, so a capture
    may keep the value it had then; a "meta" tensor stands in for the device. It is noted for
    a diagnosis, not refused (a capture accepts it)."""
    scale = torch.tensor(2.0)
    with graph_replay.HostTraffic() as traffic:
        torch.ones(3) * scale  # all on the host: as plain as it gets
        torch.ones(3, device="meta") * torch.ones(3, device="meta")
    assert traffic.host_tensors == []
    with graph_replay.HostTraffic() as traffic:
        torch.ones(3, device="meta") * scale
    (note,) = traffic.host_tensors
    assert note.startswith("aten.mul.Tensor at runtime/test_graph_replay.py:")
    assert traffic.why() is None
