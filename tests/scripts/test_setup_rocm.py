"""Tests for codes/practices/amd/microduck-rl/scripts/setup_rocm.sh.

No machine this runs on has an AMD GPU, ROCm or uv, so each test copies the script into a
temporary copy of the module folder and runs it with PATH holding only the stubs in
tests/scripts/stubs/ (plus bash and nproc). The stubs log every call; the tests assert on exit
codes, messages, the logged argv and what was (not) written. The verification step's Python really
runs, against the fake torch and warp in tests/scripts/stubs/fake_site.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE_REL = Path("codes/practices/amd/microduck-rl")
SCRIPT = REPO / MODULE_REL / "scripts" / "setup_rocm.sh"
REQUIREMENTS = REPO / "requirements-rocm.txt"
STUBS = Path(__file__).resolve().parent / "stubs"
BASH = shutil.which("bash") or "/bin/bash"

WARP_URL = "https://github.com/ROCm/warp"
WARP_COMMIT = "6530951390fa905321011dedd074572e4cdce00b"
MJWARP_URL = "https://github.com/ROCm/mujoco_warp"
MJWARP_COMMIT = "9229bb9d1a698c9464df862a915b46899720338c"
TASK_ID = "Mjlab-Velocity-Flat-MicroDuck"

EXIT_USAGE, EXIT_PLATFORM, EXIT_NO_UV, EXIT_NO_GIT = 2, 3, 4, 5
EXIT_NO_ROCMINFO, EXIT_NO_HIPCC, EXIT_NO_TARGET, EXIT_SOURCE_TREE = 6, 7, 8, 9
EXIT_STEP_FAILED, EXIT_VERIFY_FAILED = 11, 12

STUB_TOOLS = ("uv", "git", "rocminfo", "uname")


@dataclass
class Call:
    tool: str
    cwd: Path
    hip_visible_devices: str
    args: list[str]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    calls: list[Call]

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def of(self, tool: str, *prefix: str) -> list[Call]:
        """Calls of `tool` whose argv starts with `prefix`."""
        return [c for c in self.calls if c.tool == tool and c.args[: len(prefix)] == list(prefix)]


class Sandbox:
    """A temporary repository copy holding only what setup_rocm.sh reads, plus stub tools."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.module = self.repo / MODULE_REL
        (self.module / "scripts").mkdir(parents=True)
        shutil.copy2(SCRIPT, self.module / "scripts" / "setup_rocm.sh")
        shutil.copy2(REPO / MODULE_REL / "pyproject.toml", self.module / "pyproject.toml")
        # The verification only needs the file to exist: the stub python answers for it.
        (self.module / "scripts" / "check_rocm_contacts.py").write_text("# stand-in\n")
        shutil.copy2(REQUIREMENTS, self.repo / "requirements-rocm.txt")
        self.rocm = root / "rocm"
        (self.rocm / "bin").mkdir(parents=True)
        shutil.copy2(STUBS / "hipcc", self.rocm / "bin" / "hipcc")
        self.log = root / "stub.log"
        self.bin = root / "bin"
        self.set_tools(STUB_TOOLS)

    def set_tools(self, tools: tuple[str, ...]) -> None:
        """PATH holds exactly these stubs, plus the system's bash and nproc."""
        if self.bin.exists():
            shutil.rmtree(self.bin)
        self.bin.mkdir()
        for tool in tools:
            (self.bin / tool).symlink_to(STUBS / "bin" / tool)
        for system_tool in ("bash", "nproc"):
            found = shutil.which(system_tool)
            if found:
                (self.bin / system_tool).symlink_to(found)

    def run(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        if self.log.exists():
            self.log.unlink()
        full_env = {
            "PATH": str(self.bin),
            "HOME": str(self.root),
            "LC_ALL": "C.UTF-8",
            "ROCM_PATH": str(self.rocm),
            "STUB_DIR": str(STUBS),
            "STUB_LOG": str(self.log),
            "FAKE_ROCMINFO": str(STUBS / "rocminfo" / "one_gpu.txt"),
            "FAKE_PY_REAL": sys.executable,
        }
        full_env.update(env or {})
        done = subprocess.run(
            [BASH, str(self.module / "scripts" / "setup_rocm.sh"), *args],
            cwd=cwd or self.root,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        calls = []
        if self.log.exists():
            for line in self.log.read_text().splitlines():
                tool, cwd_, hvd, *argv = line.split("\t")
                calls.append(Call(tool, Path(cwd_), hvd, argv))
        return Result(done.returncode, done.stdout, done.stderr, calls)

    def tree(self) -> set[str]:
        return {str(p.relative_to(self.repo)) for p in self.repo.rglob("*")}


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def rocminfo(name: str) -> dict[str, str]:
    return {"FAKE_ROCMINFO": str(STUBS / "rocminfo" / f"{name}.txt")}


def build_lib_call(result: Result) -> Call:
    """The build itself (not the --help query before it)."""
    (call,) = [c for c in result.of("python", "build_lib.py") if "--help" not in c.args]
    return call


def build_lib_help_calls(result: Result) -> list[Call]:
    return result.of("python", "build_lib.py", "--help")


def build_lib_help(name: str) -> dict[str, str]:
    """Which stand-in build_lib.py --help text (tests/stubs/build_lib/NAME.txt) the fork has."""
    return {"FAKE_BUILD_LIB_HELP": name}


def flag_value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


# --- usage and input validation --------------------------------------------------------------


def test_help_lists_usage_options_and_exit_codes(box: Sandbox) -> None:
    result = box.run("--help")
    assert result.returncode == 0
    assert "Usage: setup_rocm.sh [--dry-run] [GFX_TARGET]" in result.stdout
    assert "--dry-run" in result.stdout and "HIP_VISIBLE_DEVICES" in result.stdout
    assert "Exit status:" in result.stdout
    assert result.calls == []


def test_unknown_option_is_a_usage_error(box: Sandbox) -> None:
    result = box.run("--frobnicate")
    assert result.returncode == EXIT_USAGE
    assert "unknown option: --frobnicate" in result.stderr


@pytest.mark.parametrize("target", ["gfx12", "sm_90", "GFX1201", "gfx12011", "gfx1201;gfx942"])
def test_invalid_target_is_refused_before_anything_runs(box: Sandbox, target: str) -> None:
    result = box.run(target)
    assert result.returncode == EXIT_USAGE
    assert f"invalid gfx target '{target}'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.calls == []


def test_two_targets_are_refused(box: Sandbox) -> None:
    result = box.run("gfx1201", "gfx942")
    assert result.returncode == EXIT_USAGE
    assert "only one GFX_TARGET" in result.stderr


# --- prerequisites ---------------------------------------------------------------------------


@pytest.mark.parametrize(("machine", "os_name"), [("aarch64", "Linux"), ("x86_64", "Darwin")])
def test_non_x86_64_linux_is_refused(box: Sandbox, machine: str, os_name: str) -> None:
    before = box.tree()
    result = box.run("gfx1201", env={"FAKE_UNAME_M": machine, "FAKE_UNAME_S": os_name})
    assert result.returncode == EXIT_PLATFORM
    assert f"unsupported platform {os_name} {machine}" in result.stderr
    assert "x86_64 Linux" in result.stderr
    assert box.tree() == before


@pytest.mark.parametrize(
    ("missing", "status"),
    [
        ("uv", EXIT_NO_UV),
        ("git", EXIT_NO_GIT),
        ("rocminfo", EXIT_NO_ROCMINFO),
        ("hipcc", EXIT_NO_HIPCC),
    ],
)
def test_missing_tool_stops_a_real_run_with_its_own_status(
    box: Sandbox, missing: str, status: int
) -> None:
    if missing == "hipcc":
        (box.rocm / "bin" / "hipcc").unlink()
    else:
        box.set_tools(tuple(t for t in STUB_TOOLS if t != missing))
    before = box.tree()
    result = box.run()
    assert result.returncode == status
    (message,) = result.stderr.strip().splitlines()
    assert message.startswith(f"setup_rocm.sh: error: {missing} not found")
    assert box.tree() == before
    assert not result.of("uv") and not result.of("git", "clone")


def test_missing_rocminfo_with_a_target_still_stops_a_real_run(box: Sandbox) -> None:
    box.set_tools(("uv", "git", "uname"))
    result = box.run("gfx1201")
    assert result.returncode == EXIT_NO_ROCMINFO
    assert "rocminfo not found" in result.stderr


def test_no_gpu_agent_and_no_target_is_refused(box: Sandbox) -> None:
    result = box.run(env=rocminfo("no_gpu"))
    assert result.returncode == EXIT_NO_TARGET
    assert "rocminfo lists no gfx GPU agent" in result.stderr
    assert not result.of("uv")


# --- target detection and HIP_VISIBLE_DEVICES ------------------------------------------------


def test_one_gpu_target_is_auto_detected(box: Sandbox) -> None:
    result = box.run("--dry-run")
    assert result.returncode == 0, result.output
    detected = "gfx target: gfx1201 (auto-detected: first gfx agent listed by rocminfo)"
    assert detected in result.stdout
    assert "GPUs listed by rocminfo: 1 (gfx1201)" in result.stdout
    assert "--hip-arch gfx1201" in result.stdout


def test_several_gpus_first_one_wins(box: Sandbox) -> None:
    result = box.run("--dry-run", env=rocminfo("two_gpus"))
    assert result.returncode == 0, result.output
    assert "gfx target: gfx1201 (auto-detected" in result.stdout
    assert "GPUs listed by rocminfo: 2 (gfx1201 gfx942)" in result.stdout
    unset = (
        "HIP_VISIBLE_DEVICES is not set: torch and Warp see all 2 GPUs; cuda:0 is GPU 0 (gfx1201)"
    )
    assert unset in result.stdout
    plan = result.stdout.split("\nPlan (")[1]
    assert "--hip-arch gfx1201" in plan and "gfx942" not in plan


def test_several_gpus_argument_wins(box: Sandbox) -> None:
    result = box.run("gfx942", env=rocminfo("two_gpus"))
    assert result.returncode == 0, result.output
    assert "gfx target: gfx942 (given as argument)" in result.stdout
    assert flag_value(build_lib_call(result).args, "--hip-arch") == "gfx942"


def test_hip_visible_devices_is_echoed_mapped_and_passed_through(box: Sandbox) -> None:
    result = box.run(env={**rocminfo("two_gpus"), "HIP_VISIBLE_DEVICES": "1"})
    assert result.returncode == 0, result.output
    echoed = "HIP_VISIBLE_DEVICES=1 (passed through to torch and Warp; rocminfo lists all agents"
    assert echoed in result.stdout
    assert "Several GPUs: cuda:0 is GPU 1 (gfx942)" in result.stdout
    # The first agent is still the target unless given: the mismatch is pointed out.
    assert "Warp is built for gfx1201 but the visible GPU is gfx942" in result.stderr
    verify_calls = result.of("python", "-")
    assert verify_calls and all(c.hip_visible_devices == "1" for c in verify_calls)
    contact_calls = [c for c in result.of("python") if c.args[0].endswith("check_rocm_contacts.py")]
    assert contact_calls and contact_calls[0].hip_visible_devices == "1"


def test_hip_visible_devices_single_gpu_is_echoed(box: Sandbox) -> None:
    result = box.run("--dry-run", env={"HIP_VISIBLE_DEVICES": "0"})
    assert result.returncode == 0
    assert "HIP_VISIBLE_DEVICES=0 (passed through" in result.stdout
    assert "Several GPUs" not in result.stdout


def test_hip_visible_devices_unset_is_not_invented(box: Sandbox) -> None:
    result = box.run()
    assert result.returncode == 0, result.output
    assert "HIP_VISIBLE_DEVICES is not set" in result.stdout
    assert all(c.hip_visible_devices == "<unset>" for c in result.calls)


# --- dry run -------------------------------------------------------------------------------


def test_dry_run_changes_nothing_and_lists_every_command(box: Sandbox) -> None:
    before = box.tree()
    result = box.run("--dry-run", "gfx1201")
    assert result.returncode == 0, result.output
    assert box.tree() == before
    assert not (box.module / ".venv-rocm").exists() and not (box.module / ".rocm-src").exists()
    # Only read-only tools ran.
    assert {c.tool for c in result.calls} <= {"uname", "rocminfo"}
    out = result.stdout
    for expected in (
        f"git clone --filter=blob:none --no-checkout {WARP_URL} .rocm-src/warp",
        f"git -C .rocm-src/warp checkout --quiet --detach {WARP_COMMIT}",
        f"git clone --filter=blob:none --no-checkout {MJWARP_URL} .rocm-src/mujoco_warp",
        f"git -C .rocm-src/mujoco_warp checkout --quiet --detach {MJWARP_COMMIT}",
        "uv venv --python 3.12 .venv-rocm",
        "uv pip install --python .venv-rocm/bin/python -r ../../../../requirements-rocm.txt",
        f"(cd .rocm-src/warp && ../../.venv-rocm/bin/python build_lib.py --rocm-path {box.rocm} "
        "--hip-arch gfx1201 --jobs ",
        "--hipcc-options=-O0)",
        "build_lib.py --help is asked which options it defines",
        "uv pip install --python .venv-rocm/bin/python --no-deps -e .rocm-src/warp "
        "-e .rocm-src/mujoco_warp mjlab==1.3.0 -e .",
        f"list-envs lists {TASK_ID}",
        "check_rocm_contacts.py --device cuda:0 --require-hip",
        "then the IPC-event probe (microduck probe --reuses 100",
    ):
        assert expected in out, expected
    numbers = [int(line.split(".")[0]) for line in out.splitlines() if line[:3].strip().isdigit()]
    assert numbers == list(range(1, 12))
    assert "Dry run: nothing was changed." in out


def test_dry_run_without_rocm_or_uv_reports_missing_prerequisites(box: Sandbox) -> None:
    """The book's chapter 1 runs the dry run on a machine without ROCm."""
    box.set_tools(("git", "uname"))
    (box.rocm / "bin" / "hipcc").unlink()
    before = box.tree()
    result = box.run("--dry-run", "gfx1201")
    assert result.returncode == 0, result.output
    assert box.tree() == before
    for tool in ("uv", "rocminfo", "hipcc"):
        assert any(
            line.split()[:1] == [tool] and "missing (required for a real run)" in line
            for line in result.stdout.splitlines()
        ), tool
    assert "A real run on this machine would stop at:" in result.stdout
    assert "--hip-arch gfx1201" in result.stdout


def test_dry_run_without_any_stub_on_this_machine(tmp_path: Path) -> None:
    """As the notebook runs it: the real PATH, a target, no ROCm (whatever this machine has)."""
    box = Sandbox(tmp_path)
    before = box.tree()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MICRODUCK_", "HIP_"))}
    env["ROCM_PATH"] = str(tmp_path / "no-rocm")
    done = subprocess.run(
        [BASH, "setup_rocm.sh", "--dry-run", "gfx1201"],
        cwd=box.module / "scripts",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hipcc     missing (required for a real run)" in done.stdout
    assert "--hip-arch gfx1201" in done.stdout
    assert box.tree() == before


def test_dry_run_without_target_needs_rocminfo(box: Sandbox) -> None:
    box.set_tools(("uv", "git", "uname"))
    result = box.run("--dry-run")
    assert result.returncode == EXIT_NO_ROCMINFO
    assert "rocminfo not found" in result.stderr and "pass the target" in result.stderr


def test_dry_run_reports_a_dirty_tree_without_failing(box: Sandbox) -> None:
    (box.module / ".rocm-src" / "warp" / ".git").mkdir(parents=True)
    (box.module / ".rocm-src" / "warp" / ".git" / "FAKE_HEAD").write_text(WARP_COMMIT + "\n")
    result = box.run("--dry-run", env={"FAKE_GIT_DIRTY": " M warp/context.py"})
    assert result.returncode == 0, result.output
    assert (
        "managed source tree .rocm-src/warp has local changes ( M warp/context.py)" in result.stdout
    )


# --- full runs -----------------------------------------------------------------------------


def test_full_run_clones_pins_builds_installs_and_verifies(box: Sandbox) -> None:
    result = box.run()
    assert result.returncode == 0, result.output
    module = box.module

    assert [c.args for c in result.of("git", "clone")] == [
        ["clone", "--filter=blob:none", "--no-checkout", WARP_URL, ".rocm-src/warp"],
        ["clone", "--filter=blob:none", "--no-checkout", MJWARP_URL, ".rocm-src/mujoco_warp"],
    ]
    assert [c.args for c in result.of("git", "-C") if "checkout" in c.args] == [
        ["-C", ".rocm-src/warp", "checkout", "--quiet", "--detach", WARP_COMMIT],
        ["-C", ".rocm-src/mujoco_warp", "checkout", "--quiet", "--detach", MJWARP_COMMIT],
    ]
    assert all(c.cwd == module for c in result.of("git"))
    assert (module / ".rocm-src/warp/.git/FAKE_HEAD").read_text().strip() == WARP_COMMIT

    (venv,) = result.of("uv", "venv")
    assert venv.args == ["venv", "--python", "3.12", ".venv-rocm"] and venv.cwd == module

    pip = [c.args for c in result.of("uv", "pip", "install")]
    into_venv = ["pip", "install", "--python", ".venv-rocm/bin/python"]
    assert pip == [
        [*into_venv, "-r", "../../../../requirements-rocm.txt"],
        [*into_venv, "--no-deps", "-e", ".rocm-src/warp", "-e", ".rocm-src/mujoco_warp"]
        + ["mjlab==1.3.0", "-e", "."],
    ]

    build = build_lib_call(result)
    assert build.cwd == module / ".rocm-src" / "warp"
    assert flag_value(build.args, "--rocm-path") == str(box.rocm)
    assert flag_value(build.args, "--hip-arch") == "gfx1201"
    assert int(flag_value(build.args, "--jobs")) >= 1
    assert "--hipcc-options=-O0" in build.args

    # Order: environment, dependencies (NumPy for build_lib.py), build_lib.py --help, build,
    # no-deps install, verify (which runs the contact check, then the IPC probe).
    order = [(c.tool, *c.args[:2]) for c in result.calls if c.tool in ("uv", "python")]
    assert [step[:2] for step in order[:5]] == [
        ("uv", "venv"),
        ("uv", "pip"),
        ("python", "build_lib.py"),
        ("python", "build_lib.py"),
        ("uv", "pip"),
    ]
    assert order[2] == ("python", "build_lib.py", "--help")
    assert order[5][:2] == ("python", "-")
    assert build_lib_help_calls(result)[0].cwd == module / ".rocm-src" / "warp"
    assert (
        "build_lib.py --help lists: --rocm-path yes, --hip-arch yes, --jobs yes, "
        "--hipcc-options yes" in result.stdout
    )

    for check in (
        "torch sees a HIP device",
        "Warp device is HIP",
        f"mjlab lists {TASK_ID}",
        "contact check",
    ):
        assert f"ok   {check}" in result.stdout, check
    assert "list-envs exit status 3 = number of tasks" in result.stdout
    assert "verification passed" in result.stdout
    (contact,) = [c for c in result.of("python") if c.args[0].endswith("check_rocm_contacts.py")]
    assert contact.args == ["scripts/check_rocm_contacts.py", "--device", "cuda:0", "--require-hip"]
    assert contact.cwd == module
    assert (
        (module / ".rocm-src" / "warp.build-stamp").read_text().startswith(f"commit={WARP_COMMIT} ")
    )
    assert "ROCm environment ready" in result.stdout


def test_full_run_from_another_directory_uses_the_scripts_module_folder(box: Sandbox) -> None:
    elsewhere = box.root / "elsewhere"
    elsewhere.mkdir()
    result = box.run("gfx1201", cwd=elsewhere)
    assert result.returncode == 0, result.output
    assert (box.module / ".venv-rocm" / "bin" / "python").exists()
    assert list(elsewhere.iterdir()) == []
    assert not (box.repo / ".venv-rocm").exists()


def test_rerun_is_idempotent(box: Sandbox) -> None:
    first = box.run()
    assert first.returncode == 0, first.output
    second = box.run()
    assert second.returncode == 0, second.output
    assert not second.of("git", "clone")
    assert not [c for c in second.of("git", "-C") if c.args[2] in ("fetch", "checkout")]
    assert not second.of("uv", "venv")
    assert not second.of("python", "build_lib.py")  # neither --help nor the build
    assert ".rocm-src/warp is already at" in second.stdout
    assert "already built for gfx1201" in second.stdout
    # Installing again is cheap and repairs a half-installed environment, so it always runs.
    assert len(second.of("uv", "pip", "install")) == 2
    assert "verification passed" in second.stdout


def test_rerun_with_another_target_rebuilds_warp_only(box: Sandbox) -> None:
    assert box.run("gfx1201").returncode == 0
    again = box.run("gfx1200")
    assert again.returncode == 0, again.output
    assert not again.of("git", "clone")
    assert flag_value(build_lib_call(again).args, "--hip-arch") == "gfx1200"


def test_clone_at_wrong_commit_is_fetched_and_checked_out(box: Sandbox) -> None:
    assert box.run().returncode == 0
    stale = "1111111111111111111111111111111111111111"
    (box.module / ".rocm-src/warp/.git/FAKE_HEAD").write_text(stale + "\n")
    result = box.run()
    assert result.returncode == 0, result.output
    assert not result.of("git", "clone")
    warp_calls = [c.args[2:] for c in result.of("git", "-C", ".rocm-src/warp")]
    assert ["fetch", "origin", WARP_COMMIT] in warp_calls
    assert ["checkout", "--quiet", "--detach", WARP_COMMIT] in warp_calls
    assert not [c for c in result.of("git", "-C", ".rocm-src/mujoco_warp") if c.args[2] == "fetch"]
    # A moved tree is always rebuilt, whatever the stamp says.
    build_lib_call(result)


@pytest.mark.parametrize("tree", [".rocm-src/warp", ".rocm-src/mujoco_warp"])
def test_dirty_tree_is_refused_and_nothing_changes(box: Sandbox, tree: str) -> None:
    assert box.run().returncode == 0
    before = box.tree()
    result = box.run(env={"FAKE_GIT_DIRTY": " M x", "FAKE_GIT_DIRTY_TREE": tree})
    assert result.returncode == EXIT_SOURCE_TREE
    (message,) = result.stderr.strip().splitlines()
    assert f"managed source tree {tree} has local changes ( M x)" in message
    assert not result.of("uv") and not [c for c in result.of("git", "-C") if "checkout" in c.args]
    assert box.tree() == before


def test_existing_non_git_directory_is_refused(box: Sandbox) -> None:
    (box.module / ".rocm-src" / "warp").mkdir(parents=True)
    result = box.run()
    assert result.returncode == EXIT_SOURCE_TREE
    assert ".rocm-src/warp exists but is not a git checkout" in result.stderr


def test_environment_with_another_python_is_refused(box: Sandbox) -> None:
    result = box.run(env={"FAKE_VENV_PYTHON": "3.11.9"})
    assert result.returncode == 0
    result = box.run()
    assert result.returncode == 10
    assert ".venv-rocm is Python 3.11, not 3.12" in result.stderr


def test_failed_build_names_the_step_and_is_retried_next_time(box: Sandbox) -> None:
    failed = box.run(env={"FAKE_BUILD_RC": "3"})
    assert failed.returncode == EXIT_STEP_FAILED
    assert "Build ROCm Warp's native runtime for gfx1201" in failed.stderr
    assert "failed with exit status 3" in failed.stderr
    assert not (box.module / ".rocm-src" / "warp.build-stamp").exists()
    assert not failed.of("python", "-")
    retried = box.run()
    assert retried.returncode == 0, retried.output
    build_lib_call(retried)


@pytest.mark.parametrize(
    ("env", "failing_check"),
    [
        ({"FAKE_TORCH_HIP": ""}, "torch sees a HIP device"),
        ({"FAKE_TORCH_GPU": "0"}, "torch sees a HIP device"),
        ({"FAKE_WARP_HIP": "0"}, "Warp device is HIP"),
        ({"FAKE_LIST_ENVS_WITHOUT_TASK": "1"}, f"mjlab lists {TASK_ID}"),
        ({"FAKE_CONTACT_RC": "1"}, "contact check"),
    ],
)
def test_failed_verification_names_the_check(
    box: Sandbox, env: dict[str, str], failing_check: str
) -> None:
    result = box.run(env=env)
    assert result.returncode == EXIT_VERIFY_FAILED
    assert f"FAIL {failing_check}" in result.stdout
    assert f"verification failed: {failing_check}" in result.stderr
    # The other checks (and the IPC probe after them) still ran and passed.
    assert result.stdout.count("  ok   ") == 4
    assert "ok   IPC event reuse" in result.stdout


def test_missing_contact_script_fails_verification(box: Sandbox) -> None:
    (box.module / "scripts" / "check_rocm_contacts.py").unlink()
    result = box.run()
    assert result.returncode == EXIT_VERIFY_FAILED
    assert (
        "FAIL contact check" in result.stdout
        and "check_rocm_contacts.py not found" in result.stdout
    )


# --- build_lib.py options: asked, not assumed -------------------------------------------------


def test_build_lib_without_hipcc_options_is_built_without_it_with_a_warning(box: Sandbox) -> None:
    result = box.run(env=build_lib_help("no_hipcc_options"))
    assert result.returncode == 0, result.output
    build = build_lib_call(result)
    assert not [a for a in build.args if a.startswith("--hipcc-options")]
    assert flag_value(build.args, "--hip-arch") == "gfx1201"
    assert flag_value(build.args, "--rocm-path") == str(box.rocm)
    (warning,) = [line for line in result.stderr.splitlines() if "--hipcc-options" in line]
    assert warning.startswith("setup_rocm.sh: warning: build_lib.py of ROCm Warp commit ")
    assert WARP_COMMIT in warning and "building without --hipcc-options=-O0" in warning
    assert "--hipcc-options no" in result.stdout
    assert "verification passed" in result.stdout


def test_the_stub_build_refuses_an_option_its_help_does_not_list(tmp_path: Path) -> None:
    """Without the --help check the build above would stop as argparse stops it."""
    env = {"PATH": "/bin:/usr/bin", "STUB_DIR": str(STUBS), "STUB_LOG": str(tmp_path / "log"),
           "FAKE_BUILD_LIB_HELP": "no_hipcc_options"}  # fmt: skip
    done = subprocess.run(
        [BASH, str(STUBS / "venv" / "python"), "build_lib.py", "--hip-arch", "gfx1201",
         "--hipcc-options=-O0"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "error: unrecognized arguments: --hipcc-options=-O0" in done.stderr


def test_empty_hipcc_options_are_not_asked_for(box: Sandbox) -> None:
    env = {**build_lib_help("no_hipcc_options"), "MICRODUCK_WARP_HIPCC_OPTIONS": ""}
    result = box.run(env=env)
    assert result.returncode == 0, result.output
    assert "--hipcc-options" not in result.stderr
    assert not [a for a in build_lib_call(result).args if a.startswith("--hipcc-options")]


def test_build_lib_without_hip_arch_stops_naming_the_commit(box: Sandbox) -> None:
    result = box.run(env=build_lib_help("no_hip"))
    assert result.returncode == EXIT_STEP_FAILED
    (message,) = result.stderr.strip().splitlines()
    assert message.startswith("setup_rocm.sh: error: build_lib.py of ROCm Warp commit ")
    assert WARP_COMMIT in message and "defines no --hip-arch option" in message
    assert not [c for c in result.of("python", "build_lib.py") if "--help" not in c.args]


def test_build_lib_help_failure_stops_naming_the_commit(box: Sandbox) -> None:
    result = box.run(env={"FAKE_BUILD_LIB_HELP_RC": "1"})
    assert result.returncode == EXIT_STEP_FAILED
    (message,) = result.stderr.strip().splitlines()
    assert "build_lib.py --help failed with exit status 1" in message
    assert f"(ROCm Warp commit {WARP_COMMIT})" in message
    assert len(result.of("python", "build_lib.py")) == 1  # the --help query only


# --- the last lines: contact check and IPC probe verdicts ------------------------------------


def test_full_run_ends_with_the_contact_and_ipc_verdicts(box: Sandbox) -> None:
    result = box.run()
    assert result.returncode == 0, result.output
    assert result.stderr == ""
    assert result.stdout.strip().splitlines()[-3:] == [
        "Verdicts (also in .rocm-src/verdicts.txt):",
        "  contact check: PASS final_z=0.049633 max_contacts=1 device=cuda:0 is_hip=True "
        "steps=200 broadphase=neutralised",
        "  IPC event probe: ok, 100 reuses of one interprocess event past the 32-slot limit "
        "(hip 7.2.53211)",
    ]
    (probe,) = result.of("python", "-m", "mjlab_microduck.cli")
    assert probe.args[2:] == ["probe", "--reuses", "100", "--ring", "1", "--json"]
    assert probe.cwd == box.module
    verdicts = (box.module / ".rocm-src" / "verdicts.txt").read_text().splitlines()
    assert [v.split(":")[0] for v in verdicts] == ["contact check", "IPC event probe"]


def test_failing_ipc_probe_is_a_warning_naming_the_multi_process_features(box: Sandbox) -> None:
    result = box.run(env={"FAKE_IPC_PROBE": "failed"})
    assert result.returncode == 0, result.output  # single-process training is set up
    assert "verification passed" in result.stdout
    assert "WARN IPC event reuse: FAILED at reuse 32 on hip 7.2.53211" in result.stdout
    last_out = result.stdout.strip().splitlines()
    assert last_out[-1].startswith("  contact check: PASS")
    warning = result.stderr.strip().splitlines()[-1]
    assert warning.startswith("setup_rocm.sh: warning: IPC event probe FAILED at reuse 32")
    assert "this runtime shows the 32-slot interprocess-event bug of chapter 8" in warning
    for affected in ("torch.cuda.Event(interprocess=True)", "microduck train --gpu-ids",
                     "Single-process training is not affected",
                     "microduck doctor --ipc-probe --require-ipc-events"):  # fmt: skip
        assert affected in warning, affected


@pytest.mark.parametrize(
    ("probe", "says"),
    [("skipped", "skipped (interprocess events unsupported"), ("crash", "gave no verdict")],
)
def test_an_inconclusive_ipc_probe_is_a_warning_too(box: Sandbox, probe: str, says: str) -> None:
    result = box.run(env={"FAKE_IPC_PROBE": probe})
    assert result.returncode == 0, result.output
    warning = result.stderr.strip().splitlines()[-1]
    assert warning.startswith(f"setup_rocm.sh: warning: IPC event probe {says}")
    assert "unverified" in warning and "microduck train --gpu-ids" in warning


def test_verdicts_are_printed_when_the_contact_check_fails(box: Sandbox) -> None:
    result = box.run(env={"FAKE_CONTACT_RC": "1"})
    assert result.returncode == EXIT_VERIFY_FAILED
    assert "Verdicts (also in .rocm-src/verdicts.txt):" in result.stdout
    assert "  contact check: exit status 1: FAIL final_z=-0.812000" in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("setup_rocm.sh: error: verification failed")


# --- requirements file and lint --------------------------------------------------------------


def test_requirements_pin_the_rocm_stack() -> None:
    lines = [line.strip() for line in REQUIREMENTS.read_text().splitlines()]
    specs = [line for line in lines if line and not line.startswith("#")]
    base = "https://repo.radeon.com/rocm/manylinux/rocm-rel-7.2.1/"
    assert f"--find-links {base}" in specs
    for name, version in (("torch", "2.9.1"), ("torchvision", "0.24.0"), ("triton", "3.5.1")):
        (spec,) = [s for s in specs if s.startswith(f"{name} @ ")]
        wheel = spec.split(" @ ")[1]
        assert wheel.startswith(base + f"{name}-{version}%2Brocm7.2.1"), spec
        assert wheel.endswith("-cp312-cp312-linux_x86_64.whl"), spec
    for pin in ("numpy==1.26.4", "mujoco==3.10.0", "rsl-rl-lib==5.0.1", "jupyter-book>=1,<2"):
        assert pin in specs, pin
    for tool in ("jupytext", "ipykernel", "tensorboard", "matplotlib", "pandas", "imageio-ffmpeg",
                 "pydantic", "tqdm", "pytest"):  # fmt: skip
        assert any(s.split("=")[0].split(">")[0] == tool for s in specs), tool
    # Nothing the resolver sees may pull the NVIDIA warp-lang / mujoco-warp or another torch.
    names = {s.split("==")[0].split(">=")[0].split(" @ ")[0].split("[")[0] for s in specs}
    assert not names & {"warp-lang", "mujoco-warp", "mjlab"}
    assert "# no-deps: mjlab==1.3.0" in lines


def test_shellcheck_is_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "shellcheck is not installed in CI (the Makefile's system deps must add it)"
            )
        pytest.skip("shellcheck not installed (apt-get install shellcheck); CI requires it")
    scripts = [
        SCRIPT,
        STUBS / "lib.sh",
        STUBS / "hipcc",
        *(STUBS / "bin").iterdir(),
        *(STUBS / "venv").iterdir(),
    ]
    done = subprocess.run(
        [shellcheck, "-x", *map(str, scripts)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
