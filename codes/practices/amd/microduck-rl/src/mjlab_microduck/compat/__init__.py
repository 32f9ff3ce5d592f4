"""Run-time compatibility fixes for mjlab 1.3 on ROCm (and on Warp 1.13 generally).

One module per fix, each guarded by a feature check, idempotent and reversible:

=============== ==============================================================================
warp_alias      ``warp.context`` alias that mjlab 1.3 reads (missing in Warp 1.13, CPU/CUDA/HIP)
hip_stepping    eager stepping on HIP: ``WP_HIP_GRAPH_ENABLE=0`` default, mjlab capture and
                ``graph_conditional`` off on HIP devices
broadphase      a fresh broadphase every HIP step, whatever shape the ROCm fork's cache takes;
                reports no cache / disabled / neutralised / unrecognised
render_textures skip texture creation for raycast-only render contexts on HIP
buffer_syncs    mjlab's delay buffers without host syncs (every backend; the same values): on a
                GPU each sync stops the CPU queueing work, and the actuator delay runs in the
                physics loop
quat_syncs      mjlab's rotation-matrix-to-quaternion conversion without boolean-mask indexing
                (every backend; the same values): every site position and the feet's
                terrain-height sensor go through it, so it synced after every physics step
manager_graphs  the termination and reward managers replayed from CUDA graphs, their Python
                state kept as plain calls keep it: on by default with a CUDA build of torch
                and a GPU, off on CPUs and HIP unless ``MICRODUCK_MANAGER_GRAPHS=1``
=============== ==============================================================================

``install_all()`` is called when :mod:`mjlab_microduck` is imported. Every path that builds a
simulation calls it first, so it also keeps clang's CPU-feature warning out of Warp's CPU kernel
builds (:mod:`mjlab_microduck.compat.cpu_flags`: a setting, not a fix, it changes no result;
``uninstall_all()`` puts Warp's default back). It also honours the opt-in
fault injection ``MICRODUCK_FAULT_FROZEN_BROADPHASE=1`` (see :mod:`mjlab_microduck.compat.faults`),
so a training subprocess started with that variable reproduces the broken ROCm cache on any backend.
``report()`` / ``report_frame()`` say what each fix did and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mjlab_microduck.compat import (
    broadphase,
    buffer_syncs,
    hip_stepping,
    manager_graphs,
    quat_syncs,
    render_textures,
    warp_alias,
)
from mjlab_microduck.compat._hook import HookStatus

if TYPE_CHECKING:
    import pandas

__all__ = ["HookStatus", "install_all", "uninstall_all", "report", "report_frame"]

# Installation order matters only for readability of the report; the hooks are independent.
_HOOKS = (
    warp_alias, hip_stepping, broadphase, render_textures, buffer_syncs, quat_syncs,
    manager_graphs,
)  # fmt: skip


_installing = False


def install_all() -> list[HookStatus]:
    """Install every fix whose condition holds (idempotent) and apply the fault-injection env
    var. Returns one status per fix (plus the fault status when the fault is on).

    A hook that imports mjlab loads mjlab's task entry points, which import
    :mod:`mjlab_microduck.tasks`, which calls this function again. That inner call returns the
    statuses as they stand and leaves the installing to the outer one: installing from inside
    would let the outer call check a hook against its own replacement and report it inactive.
    """
    global _installing
    if _installing:
        return [hook.status() for hook in _HOOKS]
    from mjlab_microduck.compat import cpu_flags, faults

    _installing = True
    try:
        cpu_flags.quiet_cpu_feature_warning()  # before the first CPU kernel is built
        statuses = [hook.install() for hook in _HOOKS]
    finally:
        _installing = False

    fault = faults.install_from_env()
    if fault.active:
        statuses.append(fault)
    return statuses


def uninstall_all() -> None:
    """Undo every fix (and the fault injection), restoring exactly what was there before."""
    from mjlab_microduck.compat import cpu_flags, faults

    faults.disable()
    for hook in reversed(_HOOKS):
        hook.uninstall()
    cpu_flags.restore()


def report() -> list[HookStatus]:
    """Current status of every fix, with live counters in ``details``, plus the fault status."""
    from mjlab_microduck.compat import faults

    return [hook.status() for hook in _HOOKS] + [faults.status()]


def report_frame() -> pandas.DataFrame:
    """``report()`` as a table with columns fix, active, reason (for notebooks and logs)."""
    import pandas as pd

    return pd.DataFrame(
        [{"fix": s.fix, "active": s.active, "reason": s.reason} for s in report()],
        columns=["fix", "active", "reason"],
    )
