"""manager_graphs: mjlab's termination and reward managers, and in the step scope every
graph-safe call of an env step, replayed from graphs give, on a CPU through the recorded
stand-in, exactly what plain calls give, in an env and in training."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import suite_memo
import torch
from command_envs import cpu_env
from mjlab.managers.reward_manager import RewardManager
from mjlab.managers.termination_manager import TerminationManager

from mjlab_microduck.compat import _hook, manager_graphs

WALKER = "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning"
PLAIN_COMPUTE = {cls: _hook.unwrap_ours(cls.__dict__["compute"])
                 for cls in (TerminationManager, RewardManager)}  # fmt: skip


@pytest.fixture
def graphs(monkeypatch):
    """Install the hook in a mode for the test (``graphs(mode)``); uninstalled afterwards."""

    def switch(mode: str):
        monkeypatch.setenv(manager_graphs.ENV_VAR, mode)
        manager_graphs.uninstall()
        return manager_graphs.install()

    yield switch
    manager_graphs.uninstall()
    monkeypatch.delenv(manager_graphs.ENV_VAR, raising=False)
    manager_graphs.install()


def _steps(count: int, num_envs: int = 6, device: str = "cpu") -> list:
    """``count`` steps of the walker (on the CPU: 6 envs; random actions that make robots
    fall and reset), everything an env step hands out."""
    generator = torch.Generator().manual_seed(5)
    out = []
    with cpu_env(WALKER, num_envs, seed=4, device=device) as env:
        torch.manual_seed(2)
        for _ in range(count):
            action = torch.randn(num_envs, env.action_manager.total_action_dim,
                                 generator=generator).to(device)  # fmt: skip
            obs, reward, terminated, truncated, extras = env.step(action)
            log = {k: v.clone() for k, v in extras["log"].items() if isinstance(v, torch.Tensor)}
            out.append([obs["actor"].clone(), obs["critic"].clone(), reward.clone(),
                        terminated.clone(), truncated.clone(), log])  # fmt: skip
    return out


def test_mode_0_leaves_the_managers_untouched(graphs):
    status = graphs("0")
    assert not status.active and "off" in status.reason
    for cls, plain in PLAIN_COMPUTE.items():
        assert cls.__dict__["compute"] is plain


def test_auto_is_the_default_and_on_only_with_a_cuda_build_that_sees_a_gpu(graphs, monkeypatch):
    monkeypatch.delenv(manager_graphs.ENV_VAR, raising=False)
    assert manager_graphs.mode() == manager_graphs.DEFAULT_MODE == "auto"
    # no GPU for torch: auto leaves the managers untouched
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    status = graphs("auto")
    assert not status.active and status.reason.startswith("off (MICRODUCK_MANAGER_GRAPHS=auto)")
    for cls, plain in PLAIN_COMPUTE.items():
        assert cls.__dict__["compute"] is plain
    # a CUDA build that sees a GPU: on, by the same wrapper as =1
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    assert manager_graphs.auto_reason() is None
    status = graphs("auto")
    assert status.active and status.details["mode"] == "auto"
    assert TerminationManager.__dict__["compute"] is not PLAIN_COMPUTE[TerminationManager]
    # a HIP build: off until a ROCm run measures the graphs; =1 still turns them on there
    monkeypatch.setattr(torch.version, "hip", "6.4.0")
    status = graphs("auto")
    assert not status.active and "HIP build" in status.reason and "=1" in status.reason
    assert graphs("1").active


def test_an_unknown_mode_is_one_clear_error_and_leaves_the_hook_off(graphs, monkeypatch):
    monkeypatch.setenv(manager_graphs.ENV_VAR, "yes")
    with pytest.raises(ValueError, match=r"MICRODUCK_MANAGER_GRAPHS='yes': expected one of"):
        manager_graphs.mode()
    manager_graphs.uninstall()
    status = manager_graphs.install()
    assert not status.active and status.reason.endswith("left off")
    assert TerminationManager.__dict__["compute"] is PLAIN_COMPUTE[TerminationManager]


def test_install_is_idempotent_and_uninstall_puts_the_managers_back(graphs):
    first = graphs("emulate")
    assert first.active and manager_graphs.install() is first
    for cls, plain in PLAIN_COMPUTE.items():
        assert _hook.unwrap_ours(cls.__dict__["compute"]) is plain
    manager_graphs.uninstall()
    for cls, plain in PLAIN_COMPUTE.items():
        assert cls.__dict__["compute"] is plain


@pytest.mark.slow
def test_replayed_managers_step_the_walker_exactly_as_plain_ones(graphs):
    """40 steps with falls and resets: observations, rewards, terminations, time-outs and
    every logged metric equal, with both managers replayed from their second capture on."""
    graphs("0")
    plain = _steps(40)
    graphs("emulate")
    replayed = _steps(40)
    status = manager_graphs.status().details
    assert status["eager"] == {} and status["graphs"] == 2
    assert status["replays"] == 2 * (40 - 4)  # three watched calls and the capture per manager
    assert sum(int(step[3].sum()) for step in plain) >= 3  # resets happened
    for index, (a, b) in enumerate(zip(plain, replayed, strict=True)):
        assert all(torch.equal(x, y) for x, y in zip(a[:5], b[:5], strict=True)), index
        assert a[5].keys() == b[5].keys(), index
        assert all(torch.equal(a[5][k], b[5][k]) for k in a[5]), index


def _largest_difference(a: list, b: list) -> float:
    """The largest absolute difference between two runs of ``_steps``, over every step,
    output and logged metric."""
    largest = 0.0
    for step_a, step_b in zip(a, b, strict=True):
        pairs = list(zip(step_a[:5], step_b[:5], strict=True))
        pairs += [(step_a[5][k], step_b[5][k]) for k in step_a[5]]
        for x, y in pairs:
            largest = max(largest, float((x.double() - y.double()).abs().max()))
    return largest


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda); its CPU "
                    "sibling is test_replayed_managers_step_the_walker_exactly_as_plain_ones")
def test_on_a_gpu_cuda_graphs_step_the_walker_as_plain_calls(graphs):
    """CUDA graphs (mode 1), 256 envs, 40 steps: both managers captured, none left eager, and
    replayed steps differ from plain ones no more than two plain runs differ from each other
    (GPU physics need not repeat bit for bit), or by at most 1e-5. The step scope's sibling is
    in tests/jobs/test_graph_check.py."""
    graphs("0")
    plain = _steps(40, num_envs=256, device="cuda")
    again = _steps(40, num_envs=256, device="cuda")
    graphs("1")
    replayed = _steps(40, num_envs=256, device="cuda")
    details = manager_graphs.status().details
    assert details["eager"] == {} and details["graphs"] == 2, details["eager"]
    assert details["replays"] == 2 * (40 - 4)
    assert sum(int(step[3].sum()) for step in plain) >= 3  # resets happened
    spread = _largest_difference(plain, again)
    assert _largest_difference(plain, replayed) <= max(spread, 1e-5), spread


def test_id_lists_become_the_slices_that_select_the_same_entries():
    assert manager_graphs.as_slice([3]) == slice(3, 4, 1)
    assert manager_graphs.as_slice([0, 1, 2]) == slice(0, 3, 1)
    assert manager_graphs.as_slice([2, 5, 8]) == slice(2, 11, 3)
    for kept in ([2, 1], [0, 1, 3], [], [1, 1], slice(None), None, (0, 1), [0.0, 1.0]):
        assert manager_graphs.as_slice(kept) is None, kept
    data = torch.arange(40).reshape(2, 10, 2)
    for ids in ([3], [0, 1, 2], [2, 5, 8], [1, 9]):
        assert torch.equal(data[:, manager_graphs.as_slice(ids)], data[:, ids])


def test_a_managers_terms_get_their_own_sliced_copies_of_their_entity_configs():
    from types import SimpleNamespace

    from mjlab.managers.scene_entity_config import SceneEntityCfg

    shared = SceneEntityCfg("robot")
    shared.site_ids, shared.body_ids, shared.joint_ids = [4, 5], [0, 2, 3], slice(None)
    term = SimpleNamespace(params={"asset_cfg": shared, "std": 0.5})
    replaced = manager_graphs.slice_term_ids(SimpleNamespace(_term_cfgs=[term]))
    sliced = term.params["asset_cfg"]
    assert replaced == 1 and sliced is not shared and term.params["std"] == 0.5
    assert (sliced.site_ids, sliced.body_ids) == (slice(4, 6, 1), [0, 2, 3])
    assert shared.site_ids == [4, 5]  # the config other managers may hold is left alone


def test_the_walkers_managers_index_by_slices_under_the_hook(graphs):
    graphs("emulate")
    _steps(2)
    assert manager_graphs.status().details["sliced_ids"] >= 5
    graphs("0")
    assert manager_graphs.status().details.get("sliced_ids", 0) == 0


@pytest.fixture
def step_scope(graphs, monkeypatch):
    """``graphs(mode)`` with the hook's ``step`` scope."""
    monkeypatch.setenv(manager_graphs.SCOPE_VAR, "step")
    yield graphs
    monkeypatch.delenv(manager_graphs.SCOPE_VAR)


def test_with_mjlabs_own_delay_buffers_their_callers_stay_eager(step_scope):
    """mjlab's buffer moves a Python write position on every append: the watched calls see
    it change and keep the actuators' writes and the observations eager, with the plain
    values. The sync-free buffer keeps the newest frame in one slot, and both replay."""
    from mjlab_microduck.compat import buffer_syncs

    plain = _steps(12)
    buffer_syncs.uninstall()
    try:
        step_scope("emulate")
        watched = _steps(12)
        details = manager_graphs.status().details
    finally:
        buffer_syncs.install()
    assert "_pointer" in details["eager"]["ObservationManager"]
    assert "_pointer" in details["eager"]["Scene.write_data_to_sim"]
    for a, b in zip(plain, watched, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(a[:5], b[:5], strict=True))


def test_an_unknown_scope_is_one_clear_error_and_leaves_the_hook_off(graphs, monkeypatch):
    monkeypatch.setenv(manager_graphs.SCOPE_VAR, "everything")
    with pytest.raises(ValueError, match=r"MICRODUCK_GRAPH_SCOPE='everything': expected one"):
        manager_graphs.scope()
    status = graphs("emulate")
    assert not status.active and status.reason.endswith("left off")


def test_the_report_line_says_what_the_hook_did_and_reads_back_as_record_keys(graphs):
    assert graphs("0") and manager_graphs.report_line() is None
    assert manager_graphs.read_report(["Learning iteration 1/2"]) == {}
    graphs("emulate")
    _steps(6)
    line = manager_graphs.report_line()
    assert manager_graphs.read_report(["noise", line, "more noise"]) == {
        "manager_graphs.graphs": 2, "manager_graphs.replays": 2 * (6 - 4),
        "manager_graphs.managers": 2, "manager_graphs.scope": "managers",
    }  # fmt: skip
    failed = manager_graphs.REPORT_PREFIX + (
        '{"graphs": 1, "replays": 9, "managers": 2, '
        '"eager": {"RewardManager": "capture failed: not permitted"}}'
    )
    assert manager_graphs.read_report([line, failed]) == {
        "manager_graphs.graphs": 1, "manager_graphs.replays": 9, "manager_graphs.managers": 2,
        "manager_graphs.eager.RewardManager": "capture failed: not permitted",
    }  # fmt: skip


def test_the_trainer_ends_its_log_with_the_report_when_the_hook_is_on(graphs, monkeypatch,
                                                                      capsys):  # fmt: skip
    import mjlab.scripts.train

    from mjlab_microduck.jobs import train

    monkeypatch.setattr(mjlab.scripts.train, "main", lambda: print("trained"))
    graphs("emulate")
    train._mjlab_entry([])
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "trained" and manager_graphs.read_report(shown)["manager_graphs.graphs"] == 0
    graphs("0")
    train._mjlab_entry([])
    assert capsys.readouterr().out.splitlines() == ["trained"]


def test_a_trainer_stopped_by_a_signal_still_ends_its_log_with_the_report(graphs, monkeypatch,
                                                                         capsys):  # fmt: skip
    """A gait watcher stops a training at its first pass with SIGTERM: the trainer process
    still prints what the graphs did, then exits 143 as a shell reports a SIGTERM."""
    import os
    import signal
    import time

    import mjlab.scripts.train

    from mjlab_microduck.jobs import train

    def trained_until_stopped():
        print("Learning iteration 400/650")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5.0)  # the handler raises before this returns
        print("not reached")

    monkeypatch.setattr(mjlab.scripts.train, "main", trained_until_stopped)
    before = signal.getsignal(signal.SIGTERM)
    graphs("emulate")
    assert train.main(["--mjlab"]) == 143
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "Learning iteration 400/650" and "not reached" not in shown
    assert manager_graphs.read_report(shown)["manager_graphs.managers"] == 0
    graphs("0")
    assert train.main(["--mjlab"]) == 143
    assert capsys.readouterr().out.splitlines() == ["Learning iteration 400/650"]
    # the handler is put back: a later SIGTERM does what it did before
    assert signal.getsignal(signal.SIGTERM) is before


def test_on_a_cpu_mode_1_keeps_the_managers_eager(graphs):
    status = graphs("1")
    assert status.active
    _steps(6)
    details = manager_graphs.status().details
    assert details["graphs"] == 0 and details["replays"] == 0 and details["managers"] == 0


def _learned(graphs, mode: str, scope: str | None) -> tuple[list[torch.Tensor], int]:
    """Three PPO iterations of the walker on 4 CPU envs with the graphs in ``mode`` (and
    ``scope``): the actor's and critic's parameters, and how many manager calls were replayed.
    Kept for the next run of the suite (tests/suite_memo.py); the plain training, whose result
    no scope changes, is made once for both scopes."""
    from mjlab_microduck.jobs.bench import build_runner

    def make(folder: Path) -> None:
        graphs(mode)
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as log_dir:
            runner = build_runner(WALKER, 4, "cpu", 42, log_dir)
            runner.learn(num_learning_iterations=3, init_at_random_ep_len=True)
        params = [p.detach().clone() for module in (runner.alg.actor, runner.alg.critic)
                  for p in module.parameters()]  # fmt: skip
        torch.save(params, folder / "params.pt")
        (folder / "replays.json").write_text(json.dumps(manager_graphs.status().details["replays"]))

    # The key names the mode and scope itself: the variables the fixture sets are left out.
    env = {k: v for k, v in os.environ.items()
           if k not in (manager_graphs.ENV_VAR, manager_graphs.SCOPE_VAR)}  # fmt: skip
    inputs = {"task": WALKER, "envs": 4, "seed": 42, "iterations": 3, "mode": mode,
              "scope": scope}  # fmt: skip
    folder = suite_memo.kept_folder("manager_graphs_learned", inputs, make, env=env)
    params = torch.load(folder / "params.pt")
    return params, json.loads((folder / "replays.json").read_text())


@pytest.mark.parametrize("scope", ["managers", "step"])
@pytest.mark.slow
def test_training_with_replayed_managers_learns_the_same_policy(graphs, monkeypatch, scope):
    """Three PPO iterations of rsl_rl's runner (random initial episode lengths, curricula):
    the same actor and critic, parameter for parameter, in either scope."""
    monkeypatch.setenv(manager_graphs.SCOPE_VAR, scope)
    plain, _ = _learned(graphs, "0", None)
    replayed, replays = _learned(graphs, "emulate", scope)
    assert replays > 100
    assert all(torch.equal(a, b) for a, b in zip(plain, replayed, strict=True))
