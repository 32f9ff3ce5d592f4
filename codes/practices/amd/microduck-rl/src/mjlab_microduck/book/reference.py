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

TRAINING_REFERENCE_RUN = "500 iterations from scratch"
"""The throughput row chapter 9 compares recorded training with: 256 envs, end of that run."""


def throughput_table() -> Any:
    """The reported training throughputs (``FIGURES["throughput"]``) as a DataFrame, one row
    per run, each labelled with :data:`LABEL` in its ``source`` column."""
    import pandas as pd

    return pd.DataFrame(FIGURES["throughput"]).assign(source=LABEL)


def training_steps_per_s(run: str = TRAINING_REFERENCE_RUN) -> float:
    """The final env steps/s reported for ``run`` (a ``run`` of ``FIGURES["throughput"]``)."""
    for row in FIGURES["throughput"]:
        if row["run"] == run:
            return float(row["final steps/s"])
    raise KeyError(f"no reported throughput for {run!r}")
