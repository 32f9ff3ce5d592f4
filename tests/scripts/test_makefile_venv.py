"""Tests for the Makefile's ``venv`` target: how it installs into an environment.

The environment is a fake one in a temporary folder (``make venv VENV=...``, the path for an
environment made elsewhere, such as setup_rocm.sh's): its ``bin/python`` is a stub that logs its
argv, answers ``-m pip config list`` with a pip configuration and, asked by pip to install uv,
puts a uv stub beside itself; every uv stub logs its argv. The tests assert on the logged calls:
uv installs with pip's wheel folders, indexes and constraints and pip's rule of the best match
over all indexes; the uv on PATH is taken before one installed into the environment;
``UV_INSTALL=0`` installs with pip alone; the package is byte-compiled afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PIP_CONFIG = textwrap.dedent("""\
    :env:.find-links='/opt/wheels'
    global.constraint='/etc/xdg/pip/constraints.txt'
    global.extra-index-url='file:///opt/pypi/simple file:///opt/more/simple'
    global.find-links='/opt/wheels'
    global.cert='/etc/ssl/certs/ca-certificates.crt'
""")

UV_STUB = """#!/bin/bash
echo "uv($0) $*" >> "$CALLS"
"""


def _python_stub(calls: Path, pip_config: Path) -> str:
    return textwrap.dedent(f"""\
        #!/bin/bash
        echo "python $*" >> "{calls}"
        if [ "$*" = "-m pip config list" ]; then cat "{pip_config}"; fi
        case "$*" in
          "-m pip install -qq uv=="*)
            printf '#!/bin/bash\\necho "uv($0) $*" >> "{calls}"\\n' > "$(dirname "$0")/uv"
            chmod +x "$(dirname "$0")/uv";;
        esac
    """)


def _make_venv(tmp_path: Path, *args: str, uv_on_path: bool = False) -> list[str]:
    """``make venv VENV=<tmp>/env ARGS`` with the stub environment; the logged calls."""
    venv = tmp_path / "env"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls.log"
    (tmp_path / "pip.conf.list").write_text(PIP_CONFIG)
    python = venv / "bin" / "python"
    python.write_text(_python_stub(calls, tmp_path / "pip.conf.list"))
    python.chmod(0o755)
    path = [str(Path(shutil.which("make")).parent), "/usr/bin", "/bin"]
    if uv_on_path:
        tools = tmp_path / "tools"
        tools.mkdir()
        (tools / "uv").write_text(UV_STUB)
        (tools / "uv").chmod(0o755)
        path.insert(0, str(tools))
    env = {"PATH": os.pathsep.join(path), "CALLS": str(calls), "HOME": str(tmp_path)}
    done = subprocess.run(["make", "--no-print-directory", "venv", f"VENV={venv}", *args],
                          cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (venv / ".microduck-installed").is_file()
    return calls.read_text().splitlines()


# What the pip configuration above becomes: each value once, in the order pip lists them.
PIP_AS_UV = ("--find-links /opt/wheels --constraint /etc/xdg/pip/constraints.txt "
             "--extra-index-url file:///opt/pypi/simple "
             "--extra-index-url file:///opt/more/simple")  # fmt: skip


@pytest.fixture(scope="module")
def toolchain() -> str:
    """The book toolchain lines of requirements.txt, as the target passes them."""
    lines = (REPO / "requirements.txt").read_text().split("# book toolchain", 1)[1].splitlines()
    return " ".join(ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))


def test_uv_installs_with_pips_configuration(tmp_path, toolchain):
    calls = _make_venv(tmp_path)
    venv = tmp_path / "env"
    uv = f"uv({venv}/bin/uv) pip install -q --python {venv}/bin/python --compile-bytecode " \
         f"--index-strategy unsafe-best-match {PIP_AS_UV}"  # fmt: skip
    installs = [c for c in calls if c.startswith("uv(")]
    assert installs == [f"{uv} {toolchain}", f"{uv} --no-deps -e codes/practices/amd/microduck-rl"]
    # uv itself, pinned, by the environment's pip (asked again for the second install: a no-op
    # for a real pip); the package byte-compiled last.
    assert calls.count(f"python -m pip install -qq uv=={_uv_version()}") == 2
    assert calls[-1] == "python -m compileall -q codes/practices/amd/microduck-rl/src"


def test_the_uv_on_path_comes_first(tmp_path):
    calls = _make_venv(tmp_path, uv_on_path=True)
    assert not any("pip install" in c for c in calls if c.startswith("python"))
    installs = [c for c in calls if c.startswith("uv(")]
    assert len(installs) == 2
    assert all(c.startswith(f"uv({tmp_path}/tools/uv) pip install -q") for c in installs)


def test_uv_install_0_installs_with_pip_alone(tmp_path, toolchain):
    calls = _make_venv(tmp_path, "UV_INSTALL=0")
    assert not any(c.startswith("uv(") for c in calls)
    assert [c for c in calls if "pip" in c] == [
        f"python -m pip install -q {toolchain}",
        "python -m pip install -q --no-deps -e codes/practices/amd/microduck-rl",
    ]


def _uv_version() -> str:
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("UV_VERSION :="):
            return line.split(":=")[1].strip()
    raise AssertionError("no UV_VERSION in the Makefile")
