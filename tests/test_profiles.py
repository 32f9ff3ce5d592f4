"""Profile selection and sizes (mjlab_microduck.jobs.profiles)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess

import pytest

from mjlab_microduck.jobs import profiles


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


def test_full_profile_is_the_reference_recipe():
    full = profiles.FULL
    assert full.smoke_sizes == ((64, 5), (256, 5))
    assert (full.smoke_envs, full.smoke_iterations) == (64, 5)
    assert (full.main_envs, full.main_iterations, full.main_save_interval) == (256, 500, 100)
    assert (full.resume_iterations, full.resume_save_interval) == (1000, 250)
    assert full.replay_frames == 200
    assert full.replay_checkpoints == (499, 750, 1000, 1250, 1498)
    # rsl_rl numbering: 500 updates end at model_499, +1000 on resume end at model_1498.
    assert full.main_last_iteration == 499
    assert full.resume_last_iteration == 1498
    assert full.device == "cuda:0" and full.gpu_ids == (0,)
    assert full.gpu_ids_arg == ["--gpu-ids", "0"]
    assert full.seed == 42


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


def test_git_commit_unknown_outside_a_repo(tmp_path):
    assert profiles.git_commit(cwd=tmp_path) == "unknown"


def test_git_commit_reads_head(tmp_path):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True, env=env)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    assert profiles.git_commit(cwd=tmp_path) == head
    assert profiles.git_commit(short=True, cwd=tmp_path) == head[: len(
        profiles.git_commit(short=True, cwd=tmp_path))]
    assert len(head) == 40


def test_git_commit_without_git(monkeypatch, tmp_path):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(profiles.subprocess, "run", no_git)
    assert profiles.git_commit(cwd=tmp_path) == "unknown"


def test_banner_is_one_line_with_every_part(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "ci")
    no_profile_env.setattr(profiles, "backend", lambda: ("hip", "7.2.53211"))
    no_profile_env.setattr(profiles, "device_name", lambda: "AMD Radeon AI PRO R9700")
    no_profile_env.setattr(profiles, "git_commit", lambda short=False, cwd=None: "abc1234")
    when = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
    line = profiles.banner(now=when)
    assert "\n" not in line
    assert line == (
        "profile=ci | backend=hip 7.2.53211 | device=AMD Radeon AI PRO R9700 | "
        "date=2026-01-02 03:04 UTC | commit=abc1234"
    )


def test_banner_on_cpu_has_no_version(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "full")
    no_profile_env.setattr(profiles, "backend", lambda: ("cpu", None))
    line = profiles.banner()
    assert line.startswith("profile=full | backend=cpu | device=")


def test_banner_rejects_bad_profile(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "bogus")
    with pytest.raises(ValueError, match="bogus"):
        profiles.banner()


def test_backend_reports_hip_for_a_rocm_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", "7.2.53211", raising=False)
    assert profiles.backend() == ("hip", "7.2.53211")
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.version, "cuda", "12.8", raising=False)
    assert profiles.backend() == ("cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert profiles.backend() == ("cpu", None)
