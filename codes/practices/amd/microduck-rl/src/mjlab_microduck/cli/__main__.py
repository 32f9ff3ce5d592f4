"""``python -m mjlab_microduck.cli ...`` is ``microduck ...``, for an environment whose scripts
folder is not on PATH (the ROCm set-up script calls it through the environment's python)."""

from mjlab_microduck.cli import console_main

console_main()
