"""A KL target that changes with the iteration, for rsl_rl's adaptive learning-rate schedule.

Problem it solves: rsl_rl's PPO keeps one ``desired_kl`` for a whole training, and its adaptive
schedule moves the learning rate until each gradient step stays near that target. A preset's
``kl_stages`` (``tuning.KlStage``) change the target from given iterations on: the runner class
:func:`scheduled_runner` makes sets ``alg.desired_kl`` before each iteration's update, for the
iteration that update belongs to (a resumed run counts on from its checkpoint's iteration, as
rsl_rl does). The learning rate the schedule has reached carries over a stage change; the
schedule then moves it toward the new target.

A no-op for a preset without stages: :func:`scheduled_runner` returns the runner class it was
given. The update is wrapped only while ``learn`` runs, and put back after it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mjlab_microduck.tasks.tuning import VelocityTuning


def desired_kl_at(preset: VelocityTuning, iteration: int) -> float:
    """The KL target of ``preset`` for PPO iteration ``iteration``: its ``desired_kl``, or that
    of the last of its ``kl_stages`` that has begun."""
    target = preset.desired_kl
    for stage in sorted(preset.kl_stages, key=lambda s: s.iteration):
        if iteration >= stage.iteration:
            target = stage.desired_kl
    return target


class KlScheduleMixin:
    """Runs rsl_rl's ``learn`` with ``alg.desired_kl`` set per iteration from ``kl_preset``."""

    kl_preset: ClassVar[VelocityTuning]

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        alg: Any = self.alg  # type: ignore[attr-defined]
        update = alg.update
        # rsl_rl's loop starts at current_learning_iteration and takes one update per iteration.
        next_iteration = self.current_learning_iteration  # type: ignore[attr-defined]

        def scheduled_update(*args: Any, **kwargs: Any) -> Any:
            nonlocal next_iteration
            alg.desired_kl = desired_kl_at(self.kl_preset, next_iteration)
            next_iteration += 1
            return update(*args, **kwargs)

        alg.update = scheduled_update
        try:
            super().learn(num_learning_iterations, init_at_random_ep_len)  # type: ignore[misc]
        finally:
            alg.update = update


def scheduled_runner(runner_cls: type, preset: VelocityTuning) -> type:
    """``runner_cls`` with ``preset``'s KL stages applied, or ``runner_cls`` itself when the
    preset has none."""
    if not preset.kl_stages:
        return runner_cls
    return type(f"KlScheduled{runner_cls.__name__}", (KlScheduleMixin, runner_cls),
                {"kl_preset": preset, "__module__": __name__})  # fmt: skip
