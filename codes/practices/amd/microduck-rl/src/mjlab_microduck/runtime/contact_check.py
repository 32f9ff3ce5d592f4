"""Dynamic contact check: drop a sphere on a plane with MuJoCo Warp and see whether it lands.

A static check (a body resting on the floor from the first frame) cannot catch the ROCm
broadphase cache bug, because the resting pair is already in the first candidate list. This check
starts a 5 cm sphere at z = 0.2 m, 15 cm above the plane, so the sphere-plane pair is *not* a
candidate at the first step; it only collides if the broadphase is recomputed as the sphere falls.

Pass: at least one contact was seen during the run and the final height is within
[0.045, 0.055] m (resting on the plane). Timestep 0.005 s, 200 steps (1 s) by default. The result
also carries the broadphase hook's state after the drop; on a HIP device an ``unrecognised``
state means the hook met a cache it cannot clear, and this physical verdict is what decides.

Runs on any Warp device (``cpu``, ``cuda:0``; a HIP device with the ROCm fork). The compatibility
hooks are installed first, so on ROCm this checks the *fixed* stack. ``frozen_broadphase=True``
turns on the fault injection of :mod:`mjlab_microduck.compat.faults` and must make the check fail.

CLI (``microduck contact-check`` or ``scripts/check_rocm_contacts.py``; the options are the
fields of :class:`ContactCheckRequest`)::

    microduck contact-check --device cpu            # exit 0 pass, 1 fail
    microduck contact-check --device cuda:0 --require-hip   # exit 2 unless cuda:0 is HIP
    microduck contact-check --frozen-broadphase --json
"""

from __future__ import annotations

from dataclasses import dataclass

from mjlab_microduck.runtime import backend
from mjlab_microduck.runtime.backend import DeviceError

SPHERE_RADIUS_M = 0.05
START_HEIGHT_M = 0.2
TIMESTEP_S = 0.005
DEFAULT_STEPS = 200
FINAL_Z_RANGE_M = (0.045, 0.055)

_SCENE_XML = f"""
<mujoco model="contact_check">
  <option timestep="{TIMESTEP_S}"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="ball" pos="0 0 {START_HEIGHT_M}">
      <freejoint/>
      <geom name="ball" type="sphere" size="{SPHERE_RADIUS_M}" mass="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


@dataclass(frozen=True)
class ContactCheckResult:
    passed: bool
    final_z: float
    max_contacts: int
    device: str
    is_hip: bool
    steps: int
    timestep: float
    frozen_broadphase: bool = False
    # State of the broadphase hook after the drop (none / disabled / neutralised /
    # unrecognised, see mjlab_microduck.compat.broadphase): on HIP it says why contacts work or
    # why the hook cannot vouch for them; the physics above decides the verdict.
    broadphase: str = ""

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        text = (
            f"{verdict} final_z={self.final_z:.6f} max_contacts={self.max_contacts} "
            f"device={self.device} is_hip={self.is_hip} steps={self.steps}"
        )
        if self.is_hip and self.broadphase:
            text += f" broadphase={self.broadphase}"
        return text


def resolve_device(device: str):  # -> warp Device
    """The Warp device ``device`` names; :class:`DeviceError` (one line) for a malformed name or
    one this machine's Warp does not have (the drop runs on Warp, so Warp decides)."""
    import warp as wp

    backend.parse_device(device)
    try:
        return wp.get_device(device)
    except (ValueError, RuntimeError) as exc:
        raise DeviceError(f"Warp device {device!r} is not available: {exc}") from exc


def verdict(final_z: float, max_contacts: int) -> bool:
    low, high = FINAL_Z_RANGE_M
    return max_contacts >= 1 and low <= final_z <= high


@dataclass(frozen=True)
class DropTrace:
    """Per-step sphere height and contact count of one drop (for plots and tests)."""

    z: tuple[float, ...]
    contacts: tuple[int, ...]
    device: str
    is_hip: bool


def simulate_drop(
    device: str = "cpu", steps: int = DEFAULT_STEPS, frozen_broadphase: bool = False
) -> DropTrace:
    """Drop the sphere for ``steps`` steps on ``device`` and record every step.

    The compatibility hooks are installed first (idempotent). With ``frozen_broadphase`` the
    fault of :mod:`mjlab_microduck.compat.faults` is on for this drop only (unless it was
    already on).
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    import mujoco

    from mjlab_microduck import compat
    from mjlab_microduck.compat import _hook, faults

    compat.install_all()
    import mujoco_warp as mjw
    import warp as wp

    wp_device = resolve_device(device)
    mjm = mujoco.MjModel.from_xml_string(_SCENE_XML)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)

    fault_was_on = faults.is_enabled()
    if frozen_broadphase:
        faults.enable(source="contact check")
    heights: list[float] = []
    contacts: list[int] = []
    try:
        with wp.ScopedDevice(wp_device):
            model = mjw.put_model(mjm)
            data = mjw.put_data(mjm, mjd, nworld=1, nconmax=8, njmax=32)
            for _ in range(steps):
                mjw.step(model, data)
                contacts.append(int(data.nacon.numpy()[0]))
                heights.append(float(data.qpos.numpy()[0, 2]))
    finally:
        if frozen_broadphase and not fault_was_on:
            faults.disable()
    return DropTrace(
        tuple(heights), tuple(contacts), str(wp_device.alias), _hook.device_is_hip(wp_device)
    )


def run_contact_check(
    device: str = "cpu", steps: int = DEFAULT_STEPS, frozen_broadphase: bool = False
) -> ContactCheckResult:
    """Drop the sphere for ``steps`` steps on ``device``; see the module docstring."""
    from mjlab_microduck.compat import broadphase, faults

    fault_was_on = faults.is_enabled()
    trace = simulate_drop(device, steps, frozen_broadphase)
    final_z = trace.z[-1]
    max_contacts = max(trace.contacts)
    hook_state, _ = broadphase.cache_state()
    return ContactCheckResult(
        passed=verdict(final_z, max_contacts),
        final_z=final_z,
        max_contacts=max_contacts,
        device=trace.device,
        is_hip=trace.is_hip,
        steps=steps,
        timestep=TIMESTEP_S,
        frozen_broadphase=frozen_broadphase or fault_was_on,
        broadphase=hook_state,
    )


@dataclass(frozen=True)
class ContactCheckRequest:
    """Drop a 5 cm sphere from 0.2 m onto a plane with MuJoCo Warp; pass when it lands (>=1
    contact, final z in [0.045, 0.055] m). Exit 0 pass, 1 fail, 2 refused or bad input."""

    device: str = "cpu"
    """Warp device, e.g. cpu or cuda:0"""
    steps: int = DEFAULT_STEPS
    """steps of 0.005 s"""
    require_hip: bool = False
    """refuse (exit 2) unless the device is a HIP device of the ROCm Warp fork"""
    frozen_broadphase: bool = False
    """inject the frozen-broadphase fault (the check must then fail)"""
    json: bool = False
    """print the result as JSON"""
    verbose: bool = False
    """let Warp log module loads and compilation"""

    def check(self) -> None:
        """Refuse what can be seen without Warp (``ValueError``, one line)."""
        if self.steps < 1:
            raise ValueError(f"--steps must be >= 1, got {self.steps}")
        backend.parse_device(self.device)


def check_request(request: ContactCheckRequest) -> None:
    """Refuse a request before the drop: the steps and the device's spelling, then whether
    this machine's Warp has the device and, with ``require_hip``, whether it is a HIP device.
    Each refusal is one ``ValueError`` line (:class:`DeviceError` for the device).

    Warp's logging is set here (quiet unless ``verbose``), before Warp first initialises:
    mjlab switches it on at import, and the verdict should stay one readable line.
    """
    request.check()
    import warp as wp

    from mjlab_microduck.compat import _hook

    wp.config.quiet = not request.verbose
    device = resolve_device(request.device)
    if request.require_hip and not _hook.device_is_hip(device):
        raise DeviceError(
            f"--require-hip but Warp device {device.alias} is not a HIP device "
            "(needs the ROCm Warp fork on an AMD GPU)"
        )


def run_request(request: ContactCheckRequest) -> ContactCheckResult:
    """:func:`check_request`, then the drop the request asks for."""
    check_request(request)
    return run_contact_check(request.device, request.steps, request.frozen_broadphase)
