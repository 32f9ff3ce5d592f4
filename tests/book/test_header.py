"""The line each chapter prints first (mjlab_microduck.book.header), and the one git commit and
torch backend readers it is made of (runtime.provenance, runtime.backend)."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from mjlab_microduck.book import header
from mjlab_microduck.runtime import backend, profiles, provenance


@pytest.fixture
def no_profile_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(profiles.PROFILE_ENV_VAR, raising=False)
    return monkeypatch


def test_git_commit_unknown_outside_a_repo(tmp_path):
    assert provenance.git_commit(cwd=tmp_path) == "unknown"


def test_git_commit_reads_head(tmp_path):
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"],
        check=True,
        env=env,
    )
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert provenance.git_commit(cwd=tmp_path) == head
    assert (
        provenance.git_commit(short=True, cwd=tmp_path)
        == head[: len(provenance.git_commit(short=True, cwd=tmp_path))]
    )
    assert len(head) == 40


def test_git_commit_without_git(monkeypatch, tmp_path):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(provenance.subprocess, "Popen", no_git)
    assert provenance.git_commit(cwd=tmp_path) == "unknown"


def test_banner_is_one_line_with_every_part(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "ci")
    no_profile_env.setattr(backend, "torch_backend", lambda: ("hip", "7.2.53211"))
    no_profile_env.setattr(header, "device_name", lambda: "AMD Radeon AI PRO R9700")
    no_profile_env.setattr(provenance, "git_commit", lambda short=False, cwd=None: "abc1234")
    when = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
    line = header.banner(now=when)
    assert "\n" not in line
    assert line == (
        "profile=ci | backend=hip 7.2.53211 | device=AMD Radeon AI PRO R9700 | "
        "date=2026-01-02 03:04 UTC | commit=abc1234"
    )


def test_banner_on_cpu_has_no_version(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "full")
    no_profile_env.setattr(backend, "torch_backend", lambda: ("cpu", None))
    line = header.banner()
    assert line.startswith("profile=full | backend=cpu | device=")


def test_banner_rejects_bad_profile(no_profile_env):
    no_profile_env.setenv(profiles.PROFILE_ENV_VAR, "bogus")
    with pytest.raises(ValueError, match="bogus"):
        header.banner()


def test_backend_reports_hip_for_a_rocm_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", "7.2.53211", raising=False)
    assert backend.torch_backend() == ("hip", "7.2.53211")
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.version, "cuda", "12.8", raising=False)
    assert backend.torch_backend() == ("cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert backend.torch_backend() == ("cpu", None)
