"""quat_syncs: mjlab's rotation-matrix-to-quaternion conversion, the same values without
boolean-mask indexing (a host sync on a GPU)."""

from __future__ import annotations

import sys

import mjlab.entity.data as entity_data
import mjlab.sensor.raycast_sensor as raycast_sensor
import mjlab.utils.lab_api.math as lab_math
import pytest
import suite_memo
import torch
from command_envs import assert_same_steps_fewer_reads

from mjlab_microduck.compat import _hook, quat_syncs
from mjlab_microduck.runtime.dispatch_count import host_reads

# mjlab's own function, under the hook if importing the tasks installed it.
MJLAB_QUAT = _hook.unwrap_ours(lab_math.quat_from_matrix)
WALKER = "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning"


@pytest.fixture
def mjlab_quat():
    """mjlab's own conversion for the test, the hook's state put back afterwards."""
    was_active = quat_syncs.status().active
    quat_syncs.uninstall()
    assert entity_data.quat_from_matrix is MJLAB_QUAT
    yield MJLAB_QUAT
    quat_syncs.uninstall()
    if was_active:
        quat_syncs.install()


def _rotations(seed: int, batch: tuple[int, ...]) -> torch.Tensor:
    """Random rotations, some of them exact half-turns and the identity."""
    generator = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(*batch, 3, 3, generator=generator))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    q = q * torch.linalg.det(q)[..., None, None]
    flat = q.reshape(-1, 3, 3)
    flat[0] = torch.eye(3)
    flat[-1] = torch.diag(torch.tensor([-1.0, 1.0, -1.0]))
    return q


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("batch", [(1,), (7,), (4, 3), (2, 5, 2)])
def test_the_same_quaternions_as_mjlab(mjlab_quat, seed, batch):
    matrices = _rotations(seed, batch)
    theirs = mjlab_quat(matrices)
    assert quat_syncs.install().active
    ours = entity_data.quat_from_matrix(matrices)
    assert ours.shape == theirs.shape == (*batch, 4)
    assert torch.equal(ours, theirs)


def test_mjlab_asks_the_host_and_the_fix_does_not(mjlab_quat):
    matrices = _rotations(0, (16,))
    assert host_reads(lambda: mjlab_quat(matrices)) >= 2  # two boolean masks
    status = quat_syncs.install()
    assert status.active and status.details["host_reads_after"] == 0
    assert status.details["host_reads_before"] >= 2
    assert host_reads(lambda: raycast_sensor.quat_from_matrix(matrices)) == 0
    assert quat_syncs.status().details["conversions"] == 1


def test_bound_in_each_importer_idempotent_and_uninstall_puts_mjlab_back(mjlab_quat):
    first = quat_syncs.install()
    assert quat_syncs.install() is first
    for module in (lab_math, entity_data, raycast_sensor):
        assert _hook.is_our_wrapper(module.quat_from_matrix, quat_syncs.FIX), module.__name__
        assert module.__name__ in first.details["modules"]
    quat_syncs.uninstall()
    for module in (lab_math, entity_data, raycast_sensor):
        assert module.quat_from_matrix is MJLAB_QUAT
    assert quat_syncs.status().reason == "not installed"


def test_turned_off_by_the_environment(mjlab_quat, monkeypatch):
    monkeypatch.setenv(quat_syncs.ENV_VAR, "0")
    status = quat_syncs.install()
    assert not status.active and f"{quat_syncs.ENV_VAR}=0" in status.reason
    assert entity_data.quat_from_matrix is MJLAB_QUAT


def _already_sync_free(matrix: torch.Tensor) -> torch.Tensor:
    """A release that fixed the conversion: the same values, no host read."""
    return quat_syncs.quat_from_matrix(matrix)


def _conjugate(matrix: torch.Tensor) -> torch.Tensor:
    """A conversion with another convention (x, y, z, w): it must not be replaced."""
    return MJLAB_QUAT(matrix)[..., [1, 2, 3, 0]]


def _other_signature(matrix: torch.Tensor, eps: float) -> torch.Tensor:
    return MJLAB_QUAT(matrix)


@pytest.mark.parametrize(
    ("original", "reason"),
    [(_already_sync_free, "reads nothing back to the host"),
     (_conjugate, "disagrees with mjlab's"),
     (_other_signature, "behaves otherwise")],
)  # fmt: skip
def test_leaves_a_conversion_it_cannot_vouch_for(original, reason):
    allowed, why, _ = quat_syncs.check(original)
    assert allowed is False and reason in why


@pytest.mark.slow
def test_walker_steps_the_same_with_fewer_host_syncs(mjlab_quat):
    """The walker task on the CPU: identical observations, rewards and terminations over 12
    env steps, and an env step that reads at least 4 fewer values back to the host (two masks
    in ``legs_collapsed``'s site positions, two in the feet's terrain-height sensor)."""
    install = lambda: quat_syncs.install().active  # noqa: E731
    assert_same_steps_fewer_reads(WALKER, install, seed=5, fewer_per_step=4)


@pytest.mark.slow
def test_install_all_before_mjlab_is_imported_reports_what_it_installed():
    """A hook that imports mjlab loads the task entry point, which calls ``install_all`` again;
    the hooks must still report themselves active afterwards (a fresh interpreter)."""
    code = (
        "from mjlab_microduck import compat\n"
        "statuses = {s.fix: s for s in compat.install_all()}\n"
        "from mjlab.utils.buffers.circular_buffer import CircularBuffer\n"
        "from mjlab_microduck.compat import _hook\n"
        "for fix in ('buffer_syncs', 'quat_syncs'):\n"
        "    s = statuses[fix]\n"
        "    print(fix, s.active, s.details['host_reads_before'] > 0)\n"
        "append = CircularBuffer.__dict__['append']\n"
        "print('patched', _hook.is_our_wrapper(append, 'buffer_syncs'))\n"
    )
    done = suite_memo.run("install_all_fresh", [sys.executable, "-c", code])  # kept, suite_memo
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.split()[0] in
             ("buffer_syncs", "quat_syncs", "patched")]  # fmt: skip
    assert lines == ["buffer_syncs True True", "quat_syncs True True", "patched True"]
