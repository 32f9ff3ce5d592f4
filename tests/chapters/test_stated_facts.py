"""Fixed facts a chapter states as text are the package's values.

Thresholds and protocol figures are written into the prose as plain Markdown (they depend on
neither the profile nor a run, so they are not glued); this test reads each one back from the
code and finds it in the chapter's text, so a changed constant cannot leave a page saying the
old number.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def prose(chapter: str) -> str:
    """The chapter's text with line breaks folded, as a reader sees its sentences."""
    return re.sub(r"\s+", " ", (REPO / "notebooks" / chapter).read_text(encoding="utf-8"))


def test_chapter_6_states_the_gait_rule_and_the_replay_protocol_as_the_code_has_them():
    from mjlab_microduck.analysis import acceptance, gait
    from mjlab_microduck.jobs import replay

    text = prose("06_replay.md")
    stated = [
        f"runs {len(gait.CASES)} cases side by side",
        f"at {gait.PUSH_TIME_S:g} s",
        f"at least {gait.MIN_PROGRESS_RATIO_MEAN:g} of the command, and no robot below "
        f"{gait.MIN_PROGRESS_RATIO_ROBOT:g}",
        f"no robot turns more than {gait.MAX_HEADING_CHANGE_RAD:g} rad in 10 s",
        f"no robot moves more than {gait.MAX_STAND_DISPLACEMENT_M:g} m",
        f"yaw rate at least {gait.MIN_YAW_RATIO:g} of the command",
        f"stiffness {gait.HEADING_CONTROL_STIFFNESS:g}",
        f"limits of {gait.OPEN_LOOP_MAX_MEDIAN_HEADING_CHANGE_RAD:g} rad (median) and "
        f"{gait.OPEN_LOOP_MAX_WORST_HEADING_CHANGE_RAD:g} rad (worst)",
        f"seed {acceptance.PROTOCOL_SEED}, and runs {acceptance.PROTOCOL_FRAMES} control frames",
        f"lin_vel_x = {acceptance.PROTOCOL_LIN_VEL_X:g} m/s",
        f"reaches {acceptance.WALK_FRACTION_OF_COMMAND:.0%} of the command, "
        f"{acceptance.MIN_FORWARD_VELOCITY_MPS:.3f} m/s",
        f"below {replay.FELL_TRUNK_Z_M:g} m or the upright proxy below {replay.FELL_UPRIGHT:g}",
    ]
    missing = [fact for fact in stated if fact not in text]
    assert missing == [], f"chapter 6 does not state these as the code has them: {missing}"
