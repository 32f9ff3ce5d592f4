"""Execute the book's notebooks into myst-nb's execution cache, several at a time.

Problem it solves: ``jupyter-book build`` executes the notebooks one after the other inside
the Sphinx process, so on the two-core CI machine one core idles through the ~15 minutes of
chapter execution (most of a chapter is one busy Python thread). ``make book`` runs this first:

1. every page of ``_toc.yml`` that is a notebook is read exactly as myst-nb reads it, with
   jupyter-book's final configuration of ``_config.yml`` (myst extensions, execution timeout,
   ``allow_errors``, exclude patterns);
2. a notebook whose code already has a cached execution is left alone (jupyter-cache matches
   on the code cells and the kernelspec, as the build does);
3. the others execute ``jobs`` at a time, each in its own kernel in the notebook's folder, the
   longest expected first (the seconds of the last recorded ``ci`` build, so the longest
   chapter does not start last), a notebook named in ``after`` only once the ones it reads
   from have finished;
4. each executed notebook is cached with its execution seconds, as myst-nb caches it, plus
   ``execution_jobs`` (how many ran at a time) for the build record.

The build that follows finds every notebook in the cache and executes none. A notebook that
fails is recorded as failed in the cache (its traceback printed here) and :func:`execute` still
runs the others, then reports the failures: ``make book`` stops before the HTML build.

The executor (the process holding the cache) is the only writer of the cache's database; the
worker processes only run nbclient and hand the executed notebook back.

With ``shown_only`` it checks what a reader meets instead: each notebook's shown cells alone
(no ``remove-*``/``hide-*`` tag), in order, each notebook in a fresh kernel, the cache neither
read nor written (``make shown-cells``).

No-op cases: importing does nothing; jupyter-book, myst-nb and jupyter-cache are imported
inside the functions.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mjlab_microduck.runs import records

DEFAULT_CACHE = Path("_build/.jupyter_cache")
DEFAULT_ESTIMATES = Path("book/results/cpu_ci_book_build")
SECONDS_PREFIX = "seconds."  # as jobs.book_build writes a chapter's time

AFTER: Mapping[str, tuple[str, ...]] = {"05_resume_1500": ("04_train_500",)}
"""Notebook stem -> the stems whose outputs it reads (it starts only after they finish):
chapter 5 reuses chapter 4's finished ci run of the same request (``results.run_live``'s
``reuse_from``)."""


REMOVED_TAGS = frozenset({"remove-input", "remove-cell"})
"""Cell tags that take a cell's code off the page."""
FOLDED_TAGS = frozenset({"hide-input", "hide-cell"})
"""Cell tags that fold a cell's code away behind a click: a reader can still open and type it."""
HIDDEN_TAGS = REMOVED_TAGS | FOLDED_TAGS
"""Cell tags that keep a cell's code out of sight (removed, or folded away)."""


class ExecuteError(ValueError):
    """The book cannot be executed as asked (no ``_toc.yml``, an unknown notebook, a cycle)."""


@dataclass(frozen=True)
class ExecuteRequest:
    """Execute the notebooks of a jupyter-book into its execution cache, several at a time."""

    root: Path = Path(".")
    """the book's folder (holding _config.yml and _toc.yml)"""
    jobs: int = 2
    """how many notebooks execute at once (each in its own kernel)"""
    cache: Path = DEFAULT_CACHE
    """myst-nb's execution cache (relative to root), the one jupyter-book build reads"""
    estimates: Path | None = DEFAULT_ESTIMATES
    """a book_build run record (relative to root): its seconds order the longest first"""
    after: tuple[str, ...] = ()
    """more "NOTEBOOK:READS" pairs of stems (NOTEBOOK starts once READS has finished)"""
    force: bool = False
    """execute every notebook, even one whose code has a cached execution"""
    shown_only: bool = False
    """execute only each notebook's shown cells, in order, in a fresh kernel (what a reader
    would type); the execution cache is neither read nor written"""

    def check(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, not {self.jobs}")
        for pair in self.after:
            if pair.count(":") != 1 or not all(pair.split(":")):
                raise ValueError(f"--after takes NOTEBOOK:READS (two stems), not {pair!r}")


@dataclass(frozen=True)
class Notebook:
    """One notebook page of the book: where it is, and its code as myst-nb reads it."""

    path: Path
    nb: object  # nbformat.NotebookNode
    read_fmt: dict | None  # how jupyter-cache reads the file back (myst-nb's reader plugin)
    timeout: int | None
    allow_errors: bool

    @property
    def stem(self) -> str:
        return self.path.stem


@dataclass(frozen=True)
class Outcome:
    """One executed notebook: its seconds, or the traceback of the cell that failed."""

    stem: str
    seconds: float
    error: str | None = None


@dataclass
class Report:
    """What :func:`execute` did: the notebooks it executed, those it found cached, the wall."""

    executed: list[Outcome] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    jobs: int = 1

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.executed if o.error is not None]


# --------------------------------------------------------------------------- the book


def toc_documents(root: Path) -> list[Path]:
    """Every page file of ``root/_toc.yml`` (root first), as an existing ``.md``/``.ipynb``."""
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise ExecuteError(f"{toc_path}: no table of contents")
    toc = yaml.safe_load(toc_path.read_text()) or {}
    docs = [toc.get("root")]

    def walk(entries) -> None:
        for entry in entries or []:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []) or []:
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    paths = []
    for doc in docs:
        if not doc:
            continue
        found = [root / f"{doc}{ext}" for ext in ("", ".md", ".ipynb") if (root / f"{doc}{ext}")
                 .is_file()]  # fmt: skip
        if not found:
            raise ExecuteError(f"{root / doc}: named in _toc.yml but missing")
        paths.append(found[0].resolve())
    return paths


def book_config(root: Path) -> dict:
    """jupyter-book's final Sphinx configuration of ``root/_config.yml`` (what the build uses)."""
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(
        user_yaml=root / "_config.yml",
        cli_config={"latex_individualpages": False},
        sourcedir=root.resolve(),
    )
    return config


def read_notebooks(root: Path, config: dict | None = None) -> list[Notebook]:
    """The notebook pages of the book, read as myst-nb reads them; pages that are plain
    Markdown (no notebook top matter) or excluded from execution are left out."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    config = book_config(root) if config is None else config
    md_fields = set(MdParserConfig.__dataclass_fields__)
    md_config = MdParserConfig(**{k[5:]: v for k, v in config.items()
                                  if k.startswith("myst_") and k[5:] in md_fields})  # fmt: skip
    nb_fields = set(NbParserConfig.__dataclass_fields__)
    nb_config = NbParserConfig(**{k[3:]: v for k, v in config.items()
                                  if k.startswith("nb_") and k[3:] in nb_fields})  # fmt: skip
    excluded = list(nb_config.execution_excludepatterns or [])
    notebooks = []
    for path in toc_documents(root):
        text = path.read_text(encoding="utf8")
        reader = create_nb_reader(str(path), md_config, nb_config, text)
        if reader is None or any(path.match(p) for p in excluded):
            continue
        nb = reader.read(text)
        if not any(c.cell_type == "code" for c in nb.cells):
            continue
        notebooks.append(Notebook(path, nb, reader.read_fmt, nb_config.execution_timeout,
                                  nb_config.execution_allow_errors))  # fmt: skip
    return notebooks


def estimates_from(record_dir: Path | None) -> dict[str, float]:
    """Each chapter's seconds in a ``book_build`` record (none when there is no record)."""
    if record_dir is None or not records.record_path(record_dir).is_file():
        return {}
    record = records.load_record(record_dir)
    return {k[len(SECONDS_PREFIX) :]: float(v) for k, v in record.summary.items()
            if k.startswith(SECONDS_PREFIX) and isinstance(v, (int, float))}  # fmt: skip


def dependencies(pairs: Sequence[str], base: Mapping[str, tuple[str, ...]] = AFTER):
    """:data:`AFTER` plus ``NOTEBOOK:READS`` pairs, as stem -> set of stems."""
    after = {k: set(v) for k, v in base.items()}
    for pair in pairs:
        notebook, reads = pair.split(":")
        after.setdefault(notebook, set()).add(reads)
    return after


# --------------------------------------------------------------------------- scheduling


def schedule(
    stems: Sequence[str], estimates: Mapping[str, float], after: Mapping[str, set[str]]
) -> Callable[[set[str], set[str]], str | None]:
    """A picker: given the stems finished and those started, the next stem to start (the
    longest expected among those whose dependencies have finished), or None.

    A dependency that is not to be executed (already cached) counts as finished. A cycle is an
    :class:`ExecuteError`.
    """
    todo = set(stems)
    needs = {s: {d for d in after.get(s, ()) if d in todo} for s in stems}
    _check_acyclic(needs)
    order = sorted(stems, key=lambda s: (-estimates.get(s, 0.0), s))

    def pick(finished: set[str], started: set[str]) -> str | None:
        for stem in order:
            if stem not in started and needs[stem] <= finished:
                return stem
        return None

    return pick


def _check_acyclic(needs: Mapping[str, set[str]]) -> None:
    done: set[str] = set()
    while len(done) < len(needs):
        ready = {s for s, deps in needs.items() if s not in done and deps <= done}
        if not ready:
            raise ExecuteError(f"the notebooks wait on each other: {sorted(set(needs) - done)}")
        done |= ready


# --------------------------------------------------------------------------- execution


def _execute_one(nb_json: str, cwd: str, timeout: int | None, allow_errors: bool, threads: int):
    """Run one notebook in a fresh kernel (in a worker process); return (nb_json, seconds,
    traceback or None). What myst-nb's cache client runs, with the same arguments."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    if threads and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(threads)  # the kernel inherits it
    nb = nbformat.reads(nb_json, as_version=4)
    with tempfile.TemporaryDirectory(prefix="microduck-kernel-") as sockets:
        result = single_nb_execution(nb, cwd=cwd, timeout=timeout, allow_errors=allow_errors,
                                     meta_override=True, config=kernel_config(sockets))  # fmt: skip
    error = (result.exc_string or repr(result.err)) if result.err is not None else None
    return nbformat.writes(result.nb), float(result.time), error


def kernel_config(socket_dir: str | Path):
    """The kernel manager's configuration: Unix-socket (``ipc``) transport where zmq has it,
    the sockets in ``socket_dir`` (a folder of this kernel's own).

    Over TCP, jupyter_client picks five free ports, lets go of them and the kernel binds them
    a moment later; with several kernels starting at once (two notebooks here, another build
    in a test beside it) one can lose a port to another and die at start-up ("Address already
    in use", then "Kernel didn't respond"). Sockets in a folder of each kernel's own cannot
    collide. The path is absolute because the kernel runs in the notebook's folder and
    jupyter_client's default socket name is relative. Where zmq lacks ipc this is the default
    (TCP) configuration."""
    import zmq
    from traitlets.config import Config

    if not zmq.has("ipc"):
        return Config()
    sockets = str(Path(socket_dir).resolve() / "kernel")
    return Config({"KernelManager": {"transport": "ipc", "ip": sockets}})


def threads_per_kernel(jobs: int, cores: int | None = None) -> int:
    """OpenMP threads for each kernel when ``jobs`` run at once on ``cores`` (0: leave the
    default, as for one job): the cores shared out, at least one each."""
    if jobs <= 1:
        return 0
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(1, cores // jobs)


def _stage(cache, notebook: Notebook):
    """Add the notebook to the cache's project as myst-nb does (with its reader, if any)."""
    if notebook.read_fmt is not None:
        return cache.add_nb_to_project(str(notebook.path), read_data=notebook.read_fmt)
    return cache.add_nb_to_project(str(notebook.path))


def shown_cells(nb):
    """A copy of ``nb`` holding only the code cells whose code a reader can read, folded or not
    (no tag of :data:`REMOVED_TAGS`), in order: what a reader would type into a fresh kernel."""
    import copy

    shown = copy.deepcopy(nb)
    shown.cells = [c for c in nb.cells if c.cell_type == "code"
                   and not REMOVED_TAGS & set(c.get("metadata", {}).get("tags", []))]  # fmt: skip
    return shown


def _run_pool(
    todo: list[str],
    by_stem: Mapping[str, Notebook],
    pick: Callable[[set[str], set[str]], str | None],
    request: ExecuteRequest,
    estimates: Mapping[str, float],
    log: Callable[[str], None],
    on_start: Callable[[Notebook], object],
    on_done: Callable[[Notebook, str | None, float, str | None], None],
) -> list[Outcome]:
    """Run ``todo`` ``request.jobs`` at a time in fresh kernels, in the order ``pick`` gives;
    ``on_start(notebook)`` returns the notebook to run, ``on_done(notebook, nb_json, seconds,
    error)`` sees each as it finishes (nb_json None when the worker died)."""
    import nbformat

    threads = threads_per_kernel(request.jobs)
    outcomes: list[Outcome] = []
    finished: set[str] = set()
    started: set[str] = set()
    running: dict[futures.Future, tuple[str, float]] = {}
    context = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(max_workers=request.jobs, mp_context=context) as pool:
        while len(finished) < len(todo):
            while len(running) < request.jobs:
                stem = pick(finished, started)
                if stem is None:
                    break
                notebook = by_stem[stem]
                future = pool.submit(_execute_one, nbformat.writes(on_start(notebook)),
                                     str(notebook.path.parent), notebook.timeout,
                                     notebook.allow_errors, threads)  # fmt: skip
                running[future] = (stem, time.monotonic())
                started.add(stem)
                expected = estimates.get(stem)
                log(f"execute: {stem} started"
                    + (f" (last recorded: {expected:.0f} s)" if expected else ""))  # fmt: skip
            done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            for future in done:
                stem, t0 = running.pop(future)
                try:
                    nb_json, seconds, error = future.result()
                except Exception as err:  # the worker died: no notebook came back
                    nb_json, seconds, error = None, time.monotonic() - t0, records.error_line(err)
                on_done(by_stem[stem], nb_json, seconds, error)
                if error is None:
                    log(f"execute: {stem} done in {seconds:.1f} s")
                else:
                    log(f"execute: {stem} FAILED after {seconds:.1f} s\n{error}")
                outcomes.append(Outcome(stem, round(seconds, 2), error))
                finished.add(stem)
    return outcomes


def execute(
    request: ExecuteRequest, log: Callable[[str], None] = print, config: dict | None = None
) -> Report:
    """Execute the book's notebooks that have no cached execution (see the module docstring);
    with ``request.shown_only``, every notebook's shown cells alone, the cache untouched."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.cache.db import NbProjectRecord

    root = request.root.resolve()
    notebooks = read_notebooks(root, config)
    by_stem = {n.stem: n for n in notebooks}
    # The book's own order (AFTER) applies to the notebooks it names that this book has; a pair
    # given on the command line must name two of its notebooks.
    given = dependencies(request.after, base={})
    after = {k: {d for d in v if d in by_stem} for k, v in AFTER.items() if k in by_stem}
    for notebook, reads in given.items():
        after.setdefault(notebook, set()).update(reads)
    unknown = sorted((set(given) | {d for ds in given.values() for d in ds}) - set(by_stem))
    if unknown:
        raise ExecuteError(f"--after names no notebook of the book: {', '.join(unknown)}")
    report = Report(jobs=request.jobs)
    estimates = estimates_from(root / request.estimates if request.estimates else None)
    started_at = time.monotonic()
    if request.shown_only:
        todo = [n.stem for n in notebooks if shown_cells(n.nb).cells]
        log(f"execute: the shown cells of {len(todo)} notebooks, {request.jobs} at a time, "
            "each in a fresh kernel; the execution cache is left alone")  # fmt: skip
        report.executed = _run_pool(todo, by_stem, schedule(todo, estimates, after), request,
                                    estimates, log, lambda n: shown_cells(n.nb),
                                    lambda *_: None)  # fmt: skip
    else:
        cache = get_cache(str(root / request.cache))
        todo = []
        for notebook in notebooks:
            cached = None
            if not request.force:
                try:
                    cached = cache.match_cache_notebook(notebook.nb)
                except KeyError:
                    cached = None
            if cached is None:
                todo.append(notebook.stem)
            else:
                report.cached.append(notebook.stem)
        threads = threads_per_kernel(request.jobs)
        log(f"execute: {len(todo)} of {len(notebooks)} notebooks to run, {request.jobs} at a time"
            + (f" ({threads} OpenMP thread(s) each)" if threads else "")
            + (f"; cached: {', '.join(report.cached)}" if report.cached else ""))  # fmt: skip

        def stage(notebook: Notebook):
            record = _stage(cache, notebook)
            NbProjectRecord.remove_tracebacks([record.pk], cache.db)
            return notebook.nb

        def keep(notebook: Notebook, nb_json: str | None, seconds: float, error: str | None):
            uri = str(notebook.path)
            if error is None:
                cache.cache_notebook_bundle(
                    CacheBundleIn(nbformat.reads(nb_json, as_version=4), uri,
                                  data={"execution_seconds": seconds,
                                        "execution_jobs": request.jobs}),
                    check_validity=False, overwrite=True,
                )  # fmt: skip
            else:
                NbProjectRecord.set_traceback(uri, error, cache.db)

        report.executed = _run_pool(todo, by_stem, schedule(todo, estimates, after), request,
                                    estimates, log, stage, keep)  # fmt: skip
    report.wall_seconds = round(time.monotonic() - started_at, 2)
    total = sum(o.seconds for o in report.executed)
    log(f"execute: {len(report.executed)} notebooks in {report.wall_seconds:.0f} s of wall time "
        f"({total:.0f} s of execution); {len(report.failed)} failed")  # fmt: skip
    return report
