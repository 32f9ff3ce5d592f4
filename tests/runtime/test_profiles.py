"""Profile selection and sizes (mjlab_microduck.runtime.profiles)."""

from __future__ import annotations

import dataclasses

import pytest

from mjlab_microduck.runtime import profiles


@pytest.fixture
def no_profile_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(profiles.PROFILE_ENV_VAR, raising=False)
    return monkeypatch


@pytest.mark.parametrize("value,expected", [("ci", "ci"), ("full", "full"), (" FULL ", "full")])
def test_env_var_selects_profile(no_profile_env, value, expected):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, value)
    assert profiles.current().name == expected


@pytest.mark.parametrize("value", ["fast", "cpu", "ci,full", "0"])
def test_bad_env_var_is_one_clear_line(no_profile_env, value):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, value)
    with pytest.raises(ValueError) as info:
        profiles.current()
    message = str(info.value)
    assert "\n" not in message
    assert repr(value.strip().lower()) in message
    assert "ci" in message and "full" in message


def test_default_is_full_on_a_gpu(no_profile_env):
    no_profile_env.setattr(profiles, "_torch_sees_gpu", lambda: True)
    assert profiles.current() is profiles.FULL


def test_default_is_ci_without_a_gpu(no_profile_env):
    no_profile_env.setattr(profiles, "_torch_sees_gpu", lambda: False)
    assert profiles.current() is profiles.CI


def test_empty_env_var_means_default(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "")
    no_profile_env.setattr(profiles, "_torch_sees_gpu", lambda: False)
    assert profiles.current().name == "ci"


def test_default_follows_torch_on_this_machine(no_profile_env):
    torch = pytest.importorskip("torch")
    expected = "full" if torch.cuda.is_available() else "ci"
    assert profiles.current().name == expected


def test_full_profile_trains_what_the_original_chapter_reported():
    """The full profile is the original recipe: its sizes are the ones the R9700 figures were
    reported for (book/reference_r9700.json), and its checkpoints are the ones replayed there."""
    from mjlab_microduck.book import reference

    full, ref = profiles.FULL, reference.FIGURES
    assert full.smoke_sizes == tuple((r["num_envs"], r["iterations"]) for r in ref["smoke"])
    assert (full.main_envs, full.main_iterations) == (
        ref["train_500"]["num_envs"], ref["train_500"]["iterations"])  # fmt: skip
    assert (full.main_iterations, full.resume_iterations) == tuple(ref["resume_1500"]["iterations"])
    # rsl_rl numbering: a resume restarts at the loaded index, so the last file is the one the
    # chapter reports, and every replayed checkpoint is one the recipe keeps.
    assert f"model_{full.resume_last_iteration}.pt" == ref["resume_1500"]["last_checkpoint"]
    replayed = tuple(int(r["checkpoint"][6:-3]) for r in ref["replays"])
    assert full.replay_checkpoints == replayed
    assert full.main_last_iteration in replayed and full.resume_last_iteration in replayed
    assert full.device == "cuda:0" and full.gpu_ids_arg == ["--gpu-ids", "0"]


def test_ci_profile_is_small_and_on_cpu():
    ci = profiles.CI
    assert ci.device == "cpu" and ci.gpu_ids is None
    assert ci.gpu_ids_arg == ["--gpu-ids", "None"]
    assert ci.smoke_sizes == ((16, 3),)
    assert (ci.main_envs, ci.main_iterations, ci.main_save_interval) == (16, 3, 1)
    assert (ci.resume_iterations, ci.resume_save_interval) == (2, 1)
    assert ci.replay_frames == 200
    assert ci.main_last_iteration == 2 and ci.resume_last_iteration == 3
    # Every CI size is below the full one: the CI book build must stay cheap.
    for field in ("main_envs", "main_iterations", "resume_iterations"):
        assert getattr(ci, field) < getattr(profiles.FULL, field)


def test_profiles_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        profiles.CI.main_envs = 4096  # type: ignore[misc]


def test_get_rejects_unknown_name():
    assert profiles.get("ci") is profiles.CI
    with pytest.raises(ValueError, match="not a profile"):
        profiles.get("huge")
