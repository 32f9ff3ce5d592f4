"""Work a test makes (a training, a fresh process), kept for the next run of the suite.

Problem it solves: a second CI run in the same checkout, nothing changed, made every tiny
training and every fresh-process command of the suite again (each imports mjlab: 10 s or more
on two cores) to get the very same outputs. With ``MICRODUCK_REPLAY_MEMO`` naming the build's
memo folder (``make`` sets it; the folder goes with the execution cache, cleared whenever the
package, ``book/results`` or the requirements change), :func:`kept_folder` keeps the folder a
piece of work wrote under ``tests/<name>-<key>/`` and hands the same folder to the next run that
asks for identical work; the tests then assert on what is in it, as they did the first time.

The key is a SHA-256 over everything that decides the outputs: the work's name and inputs
(arguments, sizes, the command line and the content of every file it names or is given),
every file of the ``mjlab_microduck`` package (not only its ``.py`` files), the versions of
torch, Warp, MuJoCo Warp, MuJoCo and mjlab, the Python executable, and the environment
variables the package, mjlab, Warp or MuJoCo read. Any change makes a new key, so the work runs
again. Work is made in its final folder (records inside it name absolute paths) and marked
complete at the end, under a file lock, so two pytest-xdist workers asking at once make it
once; an incomplete folder (a run that was killed) is made anew.

No-op cases: without the variable every call makes the work into a fresh temporary folder, as
the tests always did; nothing is read or kept.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mjlab_microduck.jobs import replay_memo

COMPLETE = ".complete"
# Environment variables whose value can change what a run does or prints.
ENV_PREFIXES = ("MICRODUCK_", "MJLAB_", "WARP_", "MUJOCO_", "PYOPENGL_", "WANDB_", "CUDA_",
                "HIP_", "ROCR_", "OMP_", "MKL_", "PYTHON", "PATH", "HOME")  # fmt: skip
# Left out although they match: the memo's own folder, and PYTHONHASHSEED. mjlab's seed_rng
# writes PYTHONHASHSEED into os.environ each time an env is seeded, so in a worker it names the
# seed of whichever test ran last (4 or 42), not anything a kept run's output depends on; keyed,
# it made a second run of the suite miss the work a first run kept whenever the test files
# reached the workers in another order.
ENV_IGNORED = ("PYTHONHASHSEED", replay_memo.ENV_VAR)


def _package_digest() -> str:
    import mjlab_microduck

    package = Path(mjlab_microduck.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ if env is None else env)
    return {k: v for k, v in sorted(env.items())
            if k.startswith(ENV_PREFIXES) and k not in ENV_IGNORED}  # fmt: skip


def key(name: str, inputs: dict, env: dict[str, str] | None = None) -> str:
    """The key of ``name`` made from ``inputs`` (JSON-able) under ``env`` (default: ours)."""
    fields = {
        "name": name, "inputs": inputs, "package": _package_digest(),
        "versions": replay_memo._versions(), "python": sys.executable,
        "env": _environment(env),
    }  # fmt: skip
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def kept_folder(name: str, inputs: dict, make: Callable[[Path], None],
                env: dict[str, str] | None = None) -> Path:  # fmt: skip
    """The folder ``make(folder)`` filled for this work: kept from an earlier run of the suite
    when the memo is on and nothing changed, else made now."""
    where = replay_memo.folder()
    if where is None:
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        make(folder)
        return folder
    folder = where / "tests" / f"{name}-{key(name, inputs, env)[:32]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / COMPLETE).is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        make(folder)
        (folder / COMPLETE).write_text(json.dumps({"name": name, "inputs": inputs}, default=str))
    return folder


def _is_file(argument: str) -> bool:
    try:
        return Path(argument).is_file()
    except OSError:  # code given with -c, longer than a file name can be
        return False


def run(name: str, argv: list[str], env: dict[str, str] | None = None, timeout: float = 600,
        files: dict[str, Path] | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """``subprocess.run(argv, env=env, capture_output=True, text=True)``, kept as above.

    The command runs in the kept folder (its working directory, ``.cwd`` of the result, where
    whatever it writes stays for the test to check); ``files`` are copied there first under
    their names, so that the command can name them relatively. Returns the completed process as
    it was when the command ran.
    """
    files = dict(files or {})

    def make(folder: Path) -> None:
        for copy, source in files.items():
            shutil.copyfile(source, folder / copy)
        proc = subprocess.run(argv, env=env, cwd=folder, capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
        done = {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
        (folder / "completed.json").write_text(json.dumps(done))

    # A script or a checkpoint counts by its content, not by its path.
    named = {a: _sha256(Path(a)) for a in argv if _is_file(a)}
    inputs = {"argv": argv, "named_files": named,
              "files": {copy: _sha256(source) for copy, source in files.items()}}  # fmt: skip
    folder = kept_folder(name, inputs, make, env)
    done = json.loads((folder / "completed.json").read_text())
    proc = subprocess.CompletedProcess(argv, done["returncode"], done["stdout"], done["stderr"])
    proc.cwd = folder
    return proc


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
