"""The one patch helper (compat._hook.PatchSet): what it replaces comes back exactly."""

from __future__ import annotations

import types

from mjlab_microduck.compat._hook import PatchSet


class Runner:
    def save(self, path):
        return f"saved {path}"


def test_an_instance_patch_reverts_to_the_class_method():
    runner = Runner()
    patches = PatchSet()
    patches.replace(runner, "save", lambda path: None)
    patches.wrap(runner, "save", lambda inner: lambda path: ("wrapped", inner(path)))
    assert runner.save("x") == ("wrapped", None)
    assert patches.revert_all() == []
    assert "save" not in vars(runner) and runner.save("x") == "saved x"


def test_module_and_class_patches_revert_in_reverse_order():
    module = types.ModuleType("fake")
    module.step = lambda: "original"
    patches = PatchSet()
    patches.wrap(module, "step", lambda inner: lambda: inner() + "+1")
    patches.wrap(module, "step", lambda inner: lambda: inner() + "+2")
    patches.replace(Runner, "extra", "added")
    assert module.step() == "original+1+2" and Runner.extra == "added"
    patches.revert_all()
    assert module.step() == "original" and not hasattr(Runner, "extra")


def test_env_default_is_only_set_when_missing(monkeypatch):
    monkeypatch.delenv("MICRODUCK_TEST_VAR", raising=False)
    monkeypatch.setenv("MICRODUCK_TEST_SET", "user")
    patches = PatchSet()
    assert patches.env_default("MICRODUCK_TEST_SET", "ours") is None
    patches.env_default("MICRODUCK_TEST_VAR", "ours")
    import os

    assert os.environ["MICRODUCK_TEST_VAR"] == "ours"
    patches.revert_all()
    assert "MICRODUCK_TEST_VAR" not in os.environ and os.environ["MICRODUCK_TEST_SET"] == "user"
