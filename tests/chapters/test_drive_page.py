"""The drive page (book/drive/, built to _build/html/drive/) in headless Chromium.

With a fixed command from the URL (0.15 m/s forward, heading held), the page must:

* follow the Python plain-MuJoCo rollout of the same export (``jobs/plain_mujoco.py``): its
  first 2 s of trunk path within 1 cm;
* progress at least 0.8 x the command over 10 s (the gait test's mean-progress threshold; this
  depends on the policy the book publishes walking, and runs on whichever it is);
* keep real time on this machine: simulated seconds >= wall seconds at every frame, no time
  dropped; the times and the real-time factor (simulated seconds per second of stepping and
  inference) are recorded as test properties and printed;
* log no console error and fetch nothing from outside the book.

Without a fixed command, the arrow keys and the hold-heading switch steer the robot, R resets,
Space stops, and a focused slider keeps the arrows; the page also runs opened from disk
(file://), and the front page links to it. It names the export it drives (task, iteration,
seed, checkpoint digest, export run) and links chapter 6's section on its limits. Without
WebAssembly, or WebGL, or when a frame throws, the status line says so. Needs Chromium (see
test_book_browser.py, whose fixtures this module shares) and a built book.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.request

import numpy as np
import pytest
from test_book_browser import (  # noqa: F401  (pytest fixtures, shared with the book's tests)
    HTML,
    _skip_or_fail,
    book_server,
    driver,
    foreign_requests,
    severe_console_errors,
)

from mjlab_microduck.analysis import gait
from mjlab_microduck.jobs import plain_mujoco as pm

# alone: the real-time check measures this machine, not two workers sharing its cores.
pytestmark = [pytest.mark.slow, pytest.mark.alone]

DRIVE = HTML / "drive"
COMMAND = gait.CASE_BY_NAME["forward_0.15"]
MATCH_S, MATCH_M = 2.0, 0.01
RUN_S = 10.0
STATE_JS = """
const s = window.drive;
return {simSeconds: s.simSeconds, wallSeconds: s.wallSeconds, computeSeconds: s.computeSeconds,
        droppedSeconds: s.droppedSeconds, stalledSeconds: s.stalledSeconds,
        minLeadSeconds: s.minLeadSeconds, dtSeconds: s.robot.dt, resets: s.resets,
        log: s.log, label: s.about.label, readout: document.getElementById('cmd-vx').textContent,
        measured: document.getElementById('meas-vx').textContent};
"""


def _needs_page() -> None:
    if not (DRIVE / "index.html").is_file():
        _skip_or_fail("the drive page is not built: run `make book` (it runs `make drive`)")


def _open(drv, url: str, before: str | None = None) -> None:
    """Load ``url``, running ``before`` (JavaScript) first in the new document: a browser
    without some feature, as the page would meet it."""
    drv.get_log("browser")
    if before is None:
        drv.get(url)
        return
    added = drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": before})
    try:
        drv.get(url)
    finally:
        drv.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                            {"identifier": added["identifier"]})  # fmt: skip


def _start(drv, url: str, before: str | None = None) -> None:
    """Open the built page at ``url`` (see :func:`_open`) and wait until it drives."""
    _needs_page()
    _open(drv, url, before)
    _wait(drv, "return !!(window.drive && window.drive.ready)", 60, "the page did not start")


def _status(drv) -> str:
    return drv.execute_script("return document.getElementById('status').textContent")


def _wait(drv, script: str, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not drv.execute_script(script):
        status = drv.execute_script("return document.getElementById('status')?.textContent")
        assert time.monotonic() < deadline, f"{what} after {timeout_s:g} s (status: {status!r})"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def fixed_run(driver, book_server):  # noqa: F811
    """The page under the fixed command, run for a little more than RUN_S simulated seconds."""
    query = f"vx={COMMAND.lin_vel_x}&vy={COMMAND.lin_vel_y}&wz={COMMAND.ang_vel_z}&hold=1"
    _start(driver, f"{book_server}/drive/index.html?{query}")
    _wait(driver, f"return window.drive.simSeconds >= {RUN_S + 0.2}", 3 * RUN_S + 30,
          f"the page did not reach {RUN_S:g} simulated seconds")  # fmt: skip
    state = driver.execute_script(STATE_JS)
    state["console"] = severe_console_errors(driver)
    state["foreign"] = foreign_requests(driver, book_server)
    return state


def _page_path(state) -> np.ndarray:
    """(x, y, z, heading) after every control step; row 0 is the reset state."""
    log = state["log"]
    assert log[0].get("reset"), "the log starts with the reset state"
    steps = round(RUN_S / 0.02)
    rows = log[: steps + 1]
    assert not any(r.get("reset") for r in rows[1:]), "the robot fell and was reset"
    return np.array([[r["x"], r["y"], r["z"], r["heading"]] for r in rows])


def test_first_2_s_match_the_python_rollout(fixed_run, record_property):
    page = _page_path(fixed_run)
    robot = pm.PlainMujocoRobot(DRIVE / "export")  # the files the page loaded
    robot.reset(0.0, pm.case_command(COMMAND, gait.HEADING_MODE))
    steps = round(MATCH_S / robot.dt)
    python = [robot.data.xpos[robot.root_body].copy()]
    for _ in range(steps):
        robot.step()
        python.append(robot.data.xpos[robot.root_body].copy())
    gap = np.linalg.norm(page[: steps + 1, :3] - np.array(python), axis=1)
    record_property("drive_page_max_trunk_gap_2s_m", float(gap.max()))
    print(f"drive page vs plain MuJoCo, first {MATCH_S:g} s: max trunk gap {gap.max():.2e} m")
    assert gap.max() < MATCH_M


def test_walks_at_least_0_8_of_the_command_with_heading_held(fixed_run, record_property):
    page = _page_path(fixed_run)
    heading0 = page[0, 3]
    dx, dy = page[-1, 0] - page[0, 0], page[-1, 1] - page[0, 1]
    progress = dx * math.cos(heading0) + dy * math.sin(heading0)
    # A plain float: pytest-xdist sends a test's properties to the controller with execnet,
    # which cannot serialise a numpy scalar (the worker then stops mid-file).
    ratio = float(progress / (COMMAND.lin_vel_x * RUN_S))
    record_property("drive_page_progress_ratio_10s", ratio)
    print(f"drive page: {progress:.3f} m in {RUN_S:g} s = {ratio:.2f} x the command")
    assert ratio >= gait.MIN_PROGRESS_RATIO_MEAN, (
        f"{fixed_run['label']}: {ratio:.2f} x the command in {RUN_S:g} s"
    )
    assert float(fixed_run["readout"]) == pytest.approx(COMMAND.lin_vel_x)
    assert math.isfinite(float(fixed_run["measured"]))


def test_keeps_real_time(fixed_run, record_property):
    s = fixed_run
    rtf = s["simSeconds"] / s["computeSeconds"]
    for key in ("simSeconds", "wallSeconds", "computeSeconds", "droppedSeconds", "stalledSeconds"):
        record_property(f"drive_page_{key}", s[key])
    record_property("drive_page_real_time_factor", rtf)
    print(f"drive page: {s['simSeconds']:.2f} s simulated in {s['wallSeconds']:.2f} s of wall "
          f"time, {s['computeSeconds']:.2f} s of it stepping and inference "
          f"(x{rtf:.1f})")  # fmt: skip
    assert s["simSeconds"] >= s["wallSeconds"]
    assert s["minLeadSeconds"] >= 0.0, "at some frame the simulation lagged the clock"
    # Time is dropped only where the browser gave the page no frame for longer than one frame
    # can catch up (a loaded machine's stall, measured as stalledSeconds), never because
    # stepping fell behind; one control step of slack for the frame timestamp's rounding.
    assert s["droppedSeconds"] <= s["stalledSeconds"] + s["dtSeconds"]
    assert rtf > 1.0


def test_no_console_error_and_nothing_remote(fixed_run):
    assert fixed_run["console"] == []
    assert fixed_run["foreign"] == []


def test_arrow_keys_and_hold_heading_steer(driver, book_server):  # noqa: F811
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _start(driver, f"{book_server}/drive/index.html")
    ranges = driver.execute_script("return window.drive.spec.command.ranges")
    command = "return Object.assign({}, window.drive.robot.command)"
    keys = ActionChains(driver)
    keys.key_down(Keys.ARROW_UP).pause(0.5).perform()
    assert driver.execute_script(command)["vx"] == pytest.approx(
        0.75 * ranges["lin_vel_x"][1], abs=0.01
    )
    keys.key_up(Keys.ARROW_UP).key_down(Keys.SHIFT).key_down(Keys.ARROW_LEFT).pause(0.5).perform()
    now = driver.execute_script(command)
    assert now["vx"] == 0 and now["vy"] == pytest.approx(0.75 * ranges["lin_vel_y"][1], abs=0.01)
    keys.key_up(Keys.ARROW_LEFT).key_up(Keys.SHIFT).perform()
    driver.find_element(By.ID, "hold").click()
    time.sleep(0.5)
    held = driver.execute_script(command)
    assert held["holdHeading"] is True and held["vy"] == 0
    heading = driver.execute_script("return window.drive.robot.heading()")
    assert held["targetHeading"] == pytest.approx(heading, abs=0.2)
    assert severe_console_errors(driver) == []


def test_works_opened_from_disk(driver):  # noqa: F811
    """The book is also read straight from _build/html (file://), where a browser refuses ES
    modules and fetch(): the page must start and walk there too."""
    _start(driver, (DRIVE / "index.html").as_uri() + "?vx=0.15&vy=0&wz=0&hold=1")
    _wait(driver, "return window.drive.simSeconds >= 3", 60, "the page did not run 3 s")
    last = driver.execute_script("return window.drive.log[window.drive.log.length - 1]")
    assert last["x"] > 0.2  # about 3 s at 0.15 m/s: it walks
    assert severe_console_errors(driver) == []


def test_front_page_links_the_drive_page(driver, book_server):  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(f"{book_server}/book/intro.html")
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a")]
    drive = [h for h in links if h and h.endswith("/drive/index.html")]
    assert drive, "the front page has no link to the drive page"
    with urllib.request.urlopen(drive[0], timeout=10) as response:
        assert response.status == 200 and b"Drive the MicroDuck" in response.read()


def test_page_names_its_export_and_links_its_limits(driver, book_server):  # noqa: F811
    from selenium.webdriver.common.by import By

    _start(driver, f"{book_server}/drive/index.html?vx=0&vy=0&wz=0")
    spec = json.loads((DRIVE / "export" / "spec.json").read_text())
    about = json.loads((DRIVE / "export" / "about.json").read_text())
    shown = driver.find_element(By.ID, "provenance").text
    checkpoint = spec["checkpoint"]
    for part in (spec["task"], f"iteration {checkpoint['iteration']}",
                 checkpoint["sha256"][:12], about["export_run"]):  # fmt: skip
        assert part in shown
    if about.get("seed") is not None:
        assert f"seed {about['seed']}" in shown
    links = {a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a")}
    assert f"{book_server}/notebooks/11_time_to_walk.html" in links
    limits = f"{book_server}/notebooks/06_replay.html#the-same-policy-in-plain-mujoco"
    assert limits in links
    chapter6 = (HTML / "notebooks" / "06_replay.html").read_text()
    assert 'id="the-same-policy-in-plain-mujoco"' in chapter6, "the Limits link lost its anchor"
    assert severe_console_errors(driver) == []


def test_download_size_is_the_scripts_size():
    _needs_page()
    html = (DRIVE / "index.html").read_text()
    stated = re.search(r"about (\d+) MB, loaded once", html)
    assert stated, "the loading status states no download size"
    scripts = ("drive.js", "ort-wasm.js", "export/export.js")
    size = sum((DRIVE / name).stat().st_size for name in scripts)
    assert int(stated.group(1)) == round(size / 1e6)


def test_keys_reset_stop_and_leave_a_focused_slider_alone(driver, book_server):  # noqa: F811
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    _start(driver, f"{book_server}/drive/index.html")
    command = "return Object.assign({}, window.drive.robot.command)"
    keys = ActionChains(driver)
    resets = driver.execute_script("return window.drive.resets")
    keys.send_keys("r").pause(0.3).perform()
    assert driver.execute_script("return window.drive.resets") == resets + 1
    keys.key_down(Keys.ARROW_UP).pause(0.3).perform()
    assert driver.execute_script(command)["vx"] > 0
    keys.send_keys(Keys.SPACE).pause(0.3).perform()
    assert driver.execute_script(command)["vx"] == 0, "Space stops"
    keys.key_up(Keys.ARROW_UP).perform()
    # A key held when the window loses focus is let go.
    keys.key_down(Keys.ARROW_LEFT).pause(0.3).perform()
    assert driver.execute_script(command)["wz"] > 0
    driver.execute_script("window.dispatchEvent(new Event('blur'))")
    time.sleep(0.3)
    assert driver.execute_script(command)["wz"] == 0
    keys.key_up(Keys.ARROW_LEFT).perform()
    # A focused slider takes the arrow as its own: one step (0.01), not the page's 75 %.
    driver.execute_script("document.getElementById('vx').focus()")
    keys.send_keys(Keys.ARROW_RIGHT).pause(0.3).perform()
    now = driver.execute_script(command)
    assert now["vx"] == pytest.approx(0.01) and now["wz"] == 0
    # R and Space are not a slider's keys: they still reset and stop with the slider focused.
    keys.send_keys(Keys.SPACE).pause(0.3).perform()
    assert driver.execute_script(command)["vx"] == 0, "Space stops with a slider focused"
    resets = driver.execute_script("return window.drive.resets")
    keys.send_keys("r").pause(0.3).perform()
    assert driver.execute_script("return window.drive.resets") == resets + 1
    assert severe_console_errors(driver) == []


def test_released_arrow_lets_go_of_its_axis_whatever_the_modifiers(driver, book_server):  # noqa: F811
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    _start(driver, f"{book_server}/drive/index.html")
    command = "return Object.assign({}, window.drive.robot.command)"
    keys = ActionChains(driver)
    # Ctrl pressed while an arrow is held: the arrow's release still stops the robot.
    keys.key_down(Keys.ARROW_UP).pause(0.3).perform()
    assert driver.execute_script(command)["vx"] > 0
    keys.key_down(Keys.CONTROL).key_up(Keys.ARROW_UP).pause(0.3).perform()
    assert driver.execute_script(command)["vx"] == 0, "a release with Ctrl down let go"
    keys.key_up(Keys.CONTROL).perform()
    # Shift released while Left is held: the key's repeats turn instead of stepping sideways,
    # and the sideways command goes back to zero; releasing Left then leaves nothing commanded.
    keys.key_down(Keys.SHIFT).key_down(Keys.ARROW_LEFT).pause(0.3).perform()
    assert driver.execute_script(command)["vy"] > 0
    keys.key_up(Keys.SHIFT).perform()
    repeat = ("document.body.dispatchEvent(new KeyboardEvent('keydown', "
              "{key: 'ArrowLeft', repeat: true, bubbles: true}))")  # fmt: skip
    driver.execute_script(repeat)
    time.sleep(0.3)
    now = driver.execute_script(command)
    assert now["vy"] == 0 and now["wz"] > 0
    keys.key_up(Keys.ARROW_LEFT).pause(0.3).perform()
    now = driver.execute_script(command)
    assert (now["vx"], now["vy"], now["wz"]) == (0, 0, 0)
    assert severe_console_errors(driver) == []


def test_a_reset_waits_for_the_step_in_flight(driver, book_server):  # noqa: F811
    """A reset asked for while a step awaits the policy applies after that step, not inside."""
    _start(driver, f"{book_server}/drive/index.html")
    _wait(driver, "return window.drive.simSeconds >= 0.5", 30, "the page did not run 0.5 s")
    # Wrap one step: click the reset button while it awaits the policy, and record the robot's
    # clock before the step and after it, and the log from the click on.
    seen = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const robot = window.drive.robot; const step = robot.step.bind(robot);
        robot.step = async (ort) => {
          robot.step = step;
          const before = robot.simTime; const logged = window.drive.log.length;
          const stepping = step(ort);
          document.getElementById('reset').click();
          await stepping;
          const after = robot.simTime;
          setTimeout(() => done({before, after, log: window.drive.log.slice(logged, logged + 2)}));
        };
    """)
    assert seen["before"] > 0
    assert seen["after"] == pytest.approx(seen["before"] + 0.02), "the step in flight ran whole"
    assert not seen["log"][0].get("reset"), "the reset landed inside the step"
    assert seen["log"][1].get("reset") is True, "the reset applied right after the step"


def test_nan_state_counts_as_a_fall(driver, book_server):  # noqa: F811
    """The spec's ``nan`` termination, as plain_mujoco.py's terminated() checks it."""
    _start(driver, f"{book_server}/drive/index.html?vx=0&vy=0&wz=0")
    fallen = driver.execute_script("""
        const robot = window.drive.robot; const qvel = robot.data.qvel;
        const before = robot.fallen(); const kept = qvel[0];
        qvel[0] = NaN; const after = robot.fallen(); qvel[0] = kept;
        return [before, after];
    """)
    assert fallen == [False, True]


def test_a_frame_that_throws_stops_with_its_message(driver, book_server):  # noqa: F811
    _start(driver, f"{book_server}/drive/index.html?vx=0&vy=0&wz=0")
    driver.execute_script("window.drive.robot.step = async () => { throw new Error('boom'); }")
    _wait(driver, "return document.getElementById('status').textContent.startsWith('stopped')",
          10, "the page did not stop")  # fmt: skip
    assert _status(driver) == "stopped: boom"


def test_without_webassembly_the_status_says_so(driver, book_server):  # noqa: F811
    _needs_page()
    _open(driver, f"{book_server}/drive/index.html", before="delete window.WebAssembly;")
    _wait(driver, "return document.getElementById('status').textContent.startsWith('could not')",
          30, "the page did not give up")  # fmt: skip
    assert "no WebAssembly" in _status(driver)


def test_without_webgl_it_runs_undrawn(driver, book_server):  # noqa: F811
    no_webgl = """
        const getContext = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
          return /webgl/.test(kind) ? null : getContext.call(this, kind, ...rest);
        };
    """
    _start(driver, f"{book_server}/drive/index.html?vx=0.15&vy=0&wz=0&hold=1", before=no_webgl)
    _wait(driver, "return window.drive.simSeconds >= 1", 30, "the page did not run 1 s")
    assert "no WebGL" in _status(driver)
    hidden = "return getComputedStyle(document.getElementById('view')).display"
    assert driver.execute_script(hidden) == "none"
    assert severe_console_errors(driver) == []
