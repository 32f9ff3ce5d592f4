"""cpu_flags: Warp's CPU kernels build without clang's CPU-feature warning, unless the user
chose the flags."""

from __future__ import annotations

import os
import sys
import textwrap
from types import SimpleNamespace

import pytest
import suite_memo

from mjlab_microduck.compat import cpu_flags


def test_unset_flags_get_the_quiet_ones_and_come_back():
    config = SimpleNamespace(cpu_compiler_flags=None)
    assert cpu_flags.quiet_cpu_feature_warning(config) is True
    assert config.cpu_compiler_flags == "-march=native -Wno-invalid-feature-combination"
    assert cpu_flags.quiet_cpu_feature_warning(config) is False  # idempotent
    assert config.cpu_compiler_flags == cpu_flags.QUIET_FLAGS
    assert cpu_flags.restore(config) is True and config.cpu_compiler_flags is None
    assert cpu_flags.restore(config) is False


def test_the_users_flags_win():
    config = SimpleNamespace(cpu_compiler_flags="-fno-vectorize")
    assert cpu_flags.quiet_cpu_feature_warning(config) is False
    assert config.cpu_compiler_flags == "-fno-vectorize"
    assert cpu_flags.restore(config) is False and config.cpu_compiler_flags == "-fno-vectorize"


@pytest.mark.slow
def test_the_tasks_set_them_before_a_cpu_kernel_is_built(tmp_path):
    # A fresh process and kernel cache (in its working directory), so the kernel is compiled
    # there, by clang. On a host whose features clang calls an invalid combination, the default
    # flags print the warning. Kept for the next run of the suite (tests/suite_memo.py).
    script = textwrap.dedent("""
        import mjlab_microduck.tasks  # noqa: F401
        import warp as wp
        from mjlab_microduck.compat import cpu_flags
        assert wp.config.cpu_compiler_flags == cpu_flags.QUIET_FLAGS, wp.config.cpu_compiler_flags
        wp.config.kernel_cache_dir = "kernels"
        wp.config.quiet = True

        @wp.kernel
        def double(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 2.0 * a[i] + 1.0

        a = wp.ones(4, dtype=float, device="cpu")
        wp.launch(double, dim=4, inputs=[a], device="cpu")
        print(a.numpy().tolist())
    """)
    (tmp_path / "build_kernel.py").write_text(script)  # Warp reads a kernel's source file
    done = suite_memo.run("cpu_flags_kernel", [sys.executable, "build_kernel.py"],
                          env={**os.environ, "MJLAB_WARP_QUIET": "1"},
                          files={"build_kernel.py": tmp_path / "build_kernel.py"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[3.0, 3.0, 3.0, 3.0]"
    assert "invalid feature combination" not in done.stderr
