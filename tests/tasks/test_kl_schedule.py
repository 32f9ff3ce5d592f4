"""A preset's KL stages set rsl_rl's KL target per iteration, through rsl_rl's own loop."""

from dataclasses import replace
from types import SimpleNamespace

import torch
from rsl_rl.runners import OnPolicyRunner

from mjlab_microduck.tasks import kl_schedule, tuning
from mjlab_microduck.tasks.runner import AtomicSaveVelocityRunner

STAGED = replace(tuning.WALKER_TURNING_AXES, name="staged", desired_kl=0.02,
                 kl_stages=(tuning.KlStage(5, 0.005), tuning.KlStage(3, 0.01)))  # fmt: skip


def test_the_target_is_the_presets_until_a_stage_begins_then_the_latest_stages():
    targets = [kl_schedule.desired_kl_at(STAGED, it) for it in range(7)]
    assert targets == [0.02, 0.02, 0.02, 0.01, 0.01, 0.005, 0.005]
    assert kl_schedule.desired_kl_at(tuning.WALKER_TURNING_AXES, 999) == tuning.DEFAULT_DESIRED_KL


def _learning_runner(runner_cls: type, start_iteration: int) -> tuple[OnPolicyRunner, list]:
    """``runner_cls`` with only what rsl_rl's ``learn`` touches: an env and an algorithm that
    do nothing, a logger that writes nothing; each update records the KL target it ran with."""
    seen: list[float] = []
    runner = object.__new__(runner_cls)
    zero = torch.zeros(1)
    runner.env = SimpleNamespace(get_observations=lambda: zero, device="cpu",
                                 step=lambda actions: (zero, zero, zero, {}))  # fmt: skip
    runner.alg = SimpleNamespace(
        desired_kl=0.02, learning_rate=1e-3, rnd=None, train_mode=lambda: None,
        act=lambda obs: zero, process_env_step=lambda *args: None,
        compute_returns=lambda obs: None, get_policy=lambda: SimpleNamespace(output_std=zero),
        update=lambda: seen.append(runner.alg.desired_kl) or {})  # fmt: skip
    runner.logger = SimpleNamespace(init_logging_writer=lambda: None, writer=None,
                                    process_env_step=lambda *args: None,
                                    log=lambda **kwargs: None)  # fmt: skip
    runner.cfg = {"num_steps_per_env": 2, "check_for_nan": False, "save_interval": 50,
                  "algorithm": {"rnd_cfg": None}}  # fmt: skip
    runner.device, runner.is_distributed = "cpu", False
    runner.current_learning_iteration = start_iteration
    return runner, seen


def test_rsl_rls_loop_runs_each_iteration_with_its_stages_target_and_resumes_counting_on():
    staged = kl_schedule.scheduled_runner(AtomicSaveVelocityRunner, STAGED)
    assert issubclass(staged, AtomicSaveVelocityRunner) and staged.kl_preset is STAGED
    runner, seen = _learning_runner(staged, start_iteration=0)
    runner.learn(7)
    assert seen == [0.02, 0.02, 0.02, 0.01, 0.01, 0.005, 0.005]
    assert runner.current_learning_iteration == 6
    # resumed from iteration 4 (rsl_rl restarts the loop at the loaded iteration)
    resumed, seen = _learning_runner(staged, start_iteration=4)
    resumed.learn(2)
    assert seen == [0.01, 0.005]
    # the update is the algorithm's own again once learn returns
    update = runner.alg.update
    runner.learn(1)
    assert runner.alg.update is update


def test_a_preset_without_stages_keeps_its_runner_and_one_target():
    assert kl_schedule.scheduled_runner(AtomicSaveVelocityRunner, tuning.WALKER_TURNING_AXES) is (
        AtomicSaveVelocityRunner)
    runner, seen = _learning_runner(AtomicSaveVelocityRunner, start_iteration=0)
    runner.learn(3)
    assert seen == [0.02, 0.02, 0.02]


def test_the_staged_preset_registers_a_scheduled_runner_for_its_task():
    from mjlab.tasks.registry import load_runner_cls

    from mjlab_microduck.tasks.velocity import TASK_ID

    staged = tuning.WALKER_TURNING_AXES_KL_STAGED
    assert staged.desired_kl == 0.02 and staged.kl_stages == (
        tuning.KlStage(400, tuning.DEFAULT_DESIRED_KL),)
    runner_cls = load_runner_cls(f"{TASK_ID}-{staged.task_suffix}")
    assert issubclass(runner_cls, kl_schedule.KlScheduleMixin)
    assert runner_cls.kl_preset is staged
    assert [kl_schedule.desired_kl_at(staged, it) for it in (0, 399, 400, 999)] == [
        0.02, 0.02, 0.01, 0.01]
    unstaged = load_runner_cls(f"{TASK_ID}-{tuning.WALKER_TURNING_AXES_WIDE_KL.task_suffix}")
    assert not issubclass(unstaged, kl_schedule.KlScheduleMixin)
