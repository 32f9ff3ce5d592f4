"""Rotation matrices to quaternions without stopping the CPU to read a mask back from the GPU.

Problem: mjlab 1.3's ``quat_from_matrix`` (``mjlab/utils/lab_api/math.py``) indexes with boolean
masks twice per call: ``ret[positive_mask] = torch.sqrt(x[positive_mask])`` and
``quat_candidates[one_hot(...) > 0.5, :]``. On a GPU a boolean index is a host sync: the GPU
must count the mask's true entries (``nonzero``) before the result can be sized, and the CPU
waits for everything queued before it. Every site position goes through it
(``EntityData.site_pos_w`` is a slice of ``site_pose_w``, which converts the site matrices), so
the MicroDuck's ``legs_collapsed`` termination syncs right after the physics substeps, before
the CPU can queue the rewards; the feet's terrain-height sensor converts its frames once per
step too.

Fix: the same arithmetic with ``torch.where`` for the positive part and a ``gather`` of the
best-conditioned candidate, bound in every loaded mjlab module that imported the function (and
in ``mjlab.utils.lab_api.math`` itself, for modules imported later). Before replacing anything,
:func:`install` converts a fixed set of rotations (random ones and the half-turns where some
candidates vanish) with mjlab's function and this one on the CPU, and replaces nothing unless
every quaternion agrees exactly.

No-op: when mjlab's function reads nothing back to the host (a release that fixed it), when the
check disagrees, or with ``MICRODUCK_SYNC_FREE_QUATS=0``. On a CPU the reads cost nothing and
so does the fix; it is installed there too, so every backend runs the same code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus
from mjlab_microduck.runtime.dispatch_count import DispatchCounter

FIX = "quat_syncs"
ENV_VAR = "MICRODUCK_SYNC_FREE_QUATS"
FUNCTION = "quat_from_matrix"
MODULES = ("mjlab.utils.lab_api.math", "mjlab.entity.data", "mjlab.sensor.raycast_sensor")
"""Imported at install so that their ``quat_from_matrix`` is bound before it is replaced."""

_state = _hook.HookState(FIX, {"conversions": 0})
_counts = _state.counts


def quat_from_matrix(matrix: Any) -> Any:
    """mjlab's ``quat_from_matrix`` (w, x, y, z) without boolean indexing: the same values."""
    import torch

    _counts["conversions"] += 1
    if matrix.size(-1) != 3 or matrix.size(-2) != 3:
        raise ValueError(f"Invalid rotation matrix shape {matrix.shape}.")
    batch_dim = matrix.shape[:-2]
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = torch.unbind(
        matrix.reshape(batch_dim + (9,)), dim=-1
    )
    diagonal_sums = torch.stack(
        [
            1.0 + m00 + m11 + m22,
            1.0 + m00 - m11 - m22,
            1.0 - m00 + m11 - m22,
            1.0 - m00 - m11 + m22,
        ],
        dim=-1,
    )
    # sqrt of the positive part; the clamp keeps the discarded branch free of NaN.
    q_abs = torch.where(
        diagonal_sums > 0, torch.sqrt(diagonal_sums.clamp(min=0.0)), torch.zeros_like(diagonal_sums)
    )
    quat_by_rijk = torch.stack(
        [
            torch.stack([q_abs[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01], dim=-1),
            torch.stack([m21 - m12, q_abs[..., 1] ** 2, m10 + m01, m02 + m20], dim=-1),
            torch.stack([m02 - m20, m10 + m01, q_abs[..., 2] ** 2, m12 + m21], dim=-1),
            torch.stack([m10 - m01, m20 + m02, m21 + m12, q_abs[..., 3] ** 2], dim=-1),
        ],
        dim=-2,
    )
    candidates = quat_by_rijk / (2.0 * q_abs[..., None].clamp(min=0.1))
    best = q_abs.argmax(dim=-1)[..., None, None].expand(*batch_dim, 1, 4)
    return torch.gather(candidates, -2, best).squeeze(-2)


def _rotations() -> Any:
    """Random rotation matrices, the identity and the three half-turns (two of the four
    candidates vanish there, so the positive part and the choice are both exercised)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    q, r = torch.linalg.qr(torch.randn(64, 3, 3, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    q = q * torch.linalg.det(q)[:, None, None]  # proper rotations
    half_turns = torch.diag_embed(torch.tensor([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0],
                                                [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]],
                                               dtype=torch.float64))  # fmt: skip
    return torch.cat([q, half_turns]).to(torch.float32).reshape(4, 17, 3, 3)


def check(original: Callable[[Any], Any]) -> tuple[bool, str, dict[str, Any]]:
    """Whether :func:`quat_from_matrix` may stand in for ``original``, why, and the host reads
    of each on the check: ``original`` must read back and agree exactly."""
    import torch

    matrices = _rotations()
    details: dict[str, Any] = {}
    counts_before = dict(_counts)  # the check's own calls are not the hook's work
    try:
        with DispatchCounter() as counted_theirs:
            theirs = original(matrices)
        with DispatchCounter() as counted_ours:
            ours = quat_from_matrix(matrices)
    except (TypeError, ValueError, RuntimeError) as error:
        return False, f"mjlab's {FUNCTION} behaves otherwise ({error}); left as is", details
    finally:
        _counts.update(counts_before)
    details["host_reads_before"] = sum(counted_theirs.reads.values())
    details["host_reads_after"] = sum(counted_ours.reads.values())
    if details["host_reads_before"] == 0:
        why = f"mjlab's {FUNCTION} reads nothing back to the host; nothing to fix"
        return False, why, details
    if theirs.shape != ours.shape or not torch.equal(theirs, ours):
        why = f"the sync-free {FUNCTION} disagrees with mjlab's on the check; left as is"
        return False, why, details
    return True, "", details


def _importers(original: Callable[[Any], Any]) -> list[Any]:
    """Every loaded mjlab module whose global ``quat_from_matrix`` is ``original``."""
    return [
        module
        for name, module in sorted(sys.modules.items())
        if (name == "mjlab" or name.startswith("mjlab."))
        and getattr(module, FUNCTION, None) is original
    ]


def install() -> HookStatus:
    """Bind :func:`quat_from_matrix` where mjlab bound its own, when :func:`check` allows.
    Idempotent."""
    if _state.active():
        return _state.active()
    import importlib

    for name in MODULES:
        importlib.import_module(name)
    original = _hook.unwrap_ours(getattr(sys.modules[MODULES[0]], FUNCTION))
    details: dict[str, Any] = {"function": f"{MODULES[0]}.{FUNCTION}"}
    off = "mjlab's own conversion, two host syncs per call"
    refused = _state.gate(ENV_VAR, off, lambda: check(original), details)
    if refused:
        return refused
    modules = _importers(original)
    replacement = _hook.stand_in(quat_from_matrix, FIX, original)
    for module in modules:
        _state.patches.replace(module, FUNCTION, replacement)
    details["modules"] = [module.__name__ for module in modules]
    return _state.set(
        True,
        f"rotation matrices convert to quaternions without host syncs (same values; "
        f"{details['host_reads_before']} host reads on the check, {details['host_reads_after']} "
        f"with the fix), in {len(modules)} mjlab modules",
        details,
    )


def uninstall() -> None:
    _state.reset()


def status() -> HookStatus:
    return _state.report()
