"""The MicroDuck's published figures (masses, inertias, poses, joint ranges, actuator gains).

Data only, read from ``microduck_figures.json``; both the spec builder (``model.py``) and the
mjlab entity config (``constants.py``) read it, so neither has to import the other's module.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

FIGURES: dict[str, Any] = json.loads(
    resources.files("mjlab_microduck.robot").joinpath("microduck_figures.json").read_text()
)
