"""``microduck recipe``: the options are the fields of
:class:`~mjlab_microduck.jobs.recipe.RecipeRequest`, checked before any folder is made. SIGINT
or SIGTERM stops it with 130 or 143 once the stage in progress has recorded itself."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import parse, run_command

DESCRIPTION = "Regenerate the book's recorded results on this machine (into logs/results/)."


def main(argv: list[str] | None = None, prog: str = "microduck recipe") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import recipe

    def build() -> recipe.RecipeRequest:
        return recipe.validate(parse(recipe.RecipeRequest, argv, prog, description=DESCRIPTION))

    def act(request: recipe.RecipeRequest) -> int:
        recipe.run_recipe(request)
        return 0

    return run_command(prog, build, act)
