"""mjlab_microduck.tasks.registry: the MicroDuck tasks are found without the mjlab.tasks entry
point (the package on PYTHONPATH, not pip-installed), as on a borrowed GPU machine."""

import sys

import pytest
import suite_memo

# Hide the entry point before mjlab is imported: mjlab loads task packages from it on import.
WITHOUT_ENTRY_POINT = """
import importlib.metadata as metadata
found = [ep for dist in metadata.distributions() for ep in dist.entry_points]
metadata.entry_points = lambda **select: metadata.EntryPoints(
    ep for ep in found if ep.group != "mjlab.tasks").select(**select)
import mjlab.tasks.registry as mjlab_registry
before = "Mjlab-Velocity-Flat-MicroDuck" in mjlab_registry.list_tasks()
from mjlab_microduck.tasks.registry import list_tasks, load_env_cfg
cfg = load_env_cfg("Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning", play=True)
print(before, "Mjlab-Velocity-Flat-MicroDuck" in list_tasks(), cfg.scene.num_envs > 0)
"""


@pytest.mark.slow
def test_tasks_found_without_the_entry_point():
    # A fresh interpreter, kept for the next run of the suite (tests/suite_memo.py).
    result = suite_memo.run("registry_without_entry_point",
                            [sys.executable, "-c", WITHOUT_ENTRY_POINT])
    assert result.returncode == 0, result.stderr[-2000:]
    # mjlab alone misses them (so the test can fail); through the package's registry they are in.
    assert result.stdout.split() == ["False", "True", "True"], result.stdout
