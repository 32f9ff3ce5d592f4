"""The figures reported on a Radeon AI PRO R9700 in the original chapter, from one data file.

``reference_r9700.json`` holds every such figure the book quotes (smoke runs, the 500- and
1500-iteration runs, the replays, the discarded experiment, the contact check, throughput).
They are the yardstick, not results of this project, and every table that shows one carries
:data:`LABEL`. ``null`` in the file marks a figure the original chapter did not report.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

FIGURES: dict[str, Any] = json.loads(
    resources.files("mjlab_microduck.book").joinpath("reference_r9700.json").read_text()
)
LABEL: str = FIGURES["label"]
MACHINE: str = FIGURES["machine"]
