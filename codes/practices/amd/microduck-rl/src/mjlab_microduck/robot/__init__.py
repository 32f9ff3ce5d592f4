"""The MicroDuck robot, built in code from published figures (no upstream mesh or MJCF here)."""

from mjlab_microduck.robot.constants import FIGURES, HOME_POSE, get_microduck_robot_cfg
from mjlab_microduck.robot.model import build_spec

__all__ = ["FIGURES", "HOME_POSE", "build_spec", "get_microduck_robot_cfg"]
