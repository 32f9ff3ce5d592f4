"""``microduck execute-book``: the options are the fields of
:class:`~mjlab_microduck.jobs.execute_book.ExecuteRequest`. ``make book`` runs it before
``jupyter-book build``; exit status 0 when every notebook has a cached execution afterwards
(with ``--shown-only``: when every notebook's shown cells ran alone), 1 when one failed (its
traceback printed), 2 on bad input (refused before anything runs)."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import parse, refuse, run_command

PROG = "microduck execute-book"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import execute_book

    def build() -> execute_book.ExecuteRequest:
        request = parse(execute_book.ExecuteRequest, argv, prog)
        if not (request.root / "_toc.yml").is_file():
            raise ValueError(f"{request.root}: no _toc.yml; give the book's folder as --root")
        return request

    def act(request: execute_book.ExecuteRequest) -> int:
        try:
            report = execute_book.execute(request, log=lambda line: print(line, flush=True))
        except execute_book.ExecuteError as err:  # found before the cache is touched
            return refuse(prog, err)
        after = ("its shown cells do not run alone" if request.shown_only
                 else "the build stops before the HTML")  # fmt: skip
        for outcome in report.failed:
            print(f"{prog}: {outcome.stem} failed; {after}", file=sys.stderr)
        return 1 if report.failed else 0

    return run_command(prog, build, act)
