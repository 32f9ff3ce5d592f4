"""Keep clang's CPU-feature warning out of Warp's CPU kernel builds.

Problem: Warp compiles CPU kernels with its embedded clang for the host CPU (``-march=native``
by default). On some Xeon hosts, virtual machines among them, LLVM detects AVX10.1 at 256 bits
beside 512-bit AVX-512, and clang reports that as an invalid combination: every kernel module
it builds prints ``warning: invalid feature combination: +avx10.1-256; will be promoted to
avx10.1-512`` from native code, into notebook cells, logs and one-line errors. The promotion is
what such a host runs, so the kernels are the same with or without the line.

Fix: keep ``-march=native`` and add clang's ``-Wno-invalid-feature-combination``.

No-op when ``warp.config.cpu_compiler_flags`` is already set (the user's flags win, and a
second call finds its own). Warp keys its kernel cache on these flags, so CPU kernels cached
under the default flags build once more.
"""

from __future__ import annotations

from types import ModuleType

DEFAULT_FLAGS = "-march=native"
"""What Warp compiles CPU kernels with when ``cpu_compiler_flags`` is None."""
QUIET_FLAGS = f"{DEFAULT_FLAGS} -Wno-invalid-feature-combination"


def quiet_cpu_feature_warning(config: ModuleType | None = None) -> bool:
    """Set Warp's CPU flags to :data:`QUIET_FLAGS` if the user left them unset; returns
    whether this call set them."""
    if config is None:
        import warp.config as config  # type: ignore[no-redef]
    if config.cpu_compiler_flags is not None:
        return False
    config.cpu_compiler_flags = QUIET_FLAGS
    return True


def restore(config: ModuleType | None = None) -> bool:
    """Put Warp's default back if the flags are still the ones this module set; returns
    whether it did (flags someone else set since are left alone)."""
    if config is None:
        import warp.config as config  # type: ignore[no-redef]
    if config.cpu_compiler_flags != QUIET_FLAGS:
        return False
    config.cpu_compiler_flags = None
    return True
