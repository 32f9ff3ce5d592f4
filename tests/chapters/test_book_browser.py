"""The built book as a reader sees it: headless Chromium over a local HTTP server.

Every page in the table of contents must load from 127.0.0.1 only (the book is read
offline), log no SEVERE console error, show its title, show no Python traceback and none of
the words of how machines were obtained ("pending", "lease", "lent"), and every <video> on it
must point at a file that exists, in a format Chromium can play, whose metadata actually
loads. The front page and one chapter per part are also screenshotted at desktop width and
checked for tables that overflow the text column outside a scroll container, and the front
page's video must reach enough data to play.

Needs Debian's chromium and chromium-driver (`make system-deps`). Locally they may be
missing and the tests are skipped with that reason; in CI (CI set) a missing browser fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "_build" / "html"
IN_CI = bool(os.environ.get("CI"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BOOK_TITLE = yaml.safe_load((REPO / "_config.yml").read_text())["title"]
# Words about how the book was made, not about what it teaches (tests/book/test_reader_pages.py
# checks the sources; this checks what the browser shows, cell outputs included).
FORBIDDEN_WORDS = re.compile(r"\b(pending|lease[sd]?|lent)\b", re.IGNORECASE)

# A headless browser over the built book: seconds per page, and the book must be built first.
pytestmark = pytest.mark.slow


def _skip_or_fail(message: str) -> None:
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def toc_docs() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    docs = [toc["root"]]
    for part in toc.get("parts", []):
        docs.extend(ch["file"] for ch in part.get("chapters", []))
    return docs


def page_title(doc: str) -> str:
    text = (REPO / f"{doc}.md").read_text()
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{doc}.md has no title")


def serve(directory: Path):
    """Start `python -m http.server` on a loopback port of its own; return (process, base_url).

    The server binds port 0 and prints the port the system gave it: a port picked here and
    bound there a moment later could be taken in between by another worker's server."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
         "--directory", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    # "Serving HTTP on 127.0.0.1 port 36247 (http://127.0.0.1:36247/) ..."
    line = proc.stdout.readline()
    found = re.search(r" port (\d+) ", line)
    if found is None:
        proc.terminate()
        raise RuntimeError(f"http.server did not say its port: {line!r}")
    base = f"http://127.0.0.1:{found.group(1)}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/", timeout=2):
                return proc, base
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("http.server exited early") from None
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"http.server did not answer on {base}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        _skip_or_fail("chromium/chromedriver not installed (run `make system-deps`)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile_dir = tmp_path_factory.mktemp("chromium-profile")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", f"--user-data-dir={profile_dir}",
                "--window-size=1280,900", "--autoplay-policy=no-user-gesture-required"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture(scope="module")
def book_server():
    if not (HTML / "index.html").is_file():
        _skip_or_fail("the book is not built: run `make book` (make test does it first)")
    proc, base = serve(HTML)
    try:
        yield base
    finally:
        stop(proc)


def severe_console_errors(drv) -> list[str]:
    return [e["message"] for e in drv.get_log("browser") if e.get("level") == "SEVERE"]


def foreign_requests(drv, base: str) -> list[str]:
    names = drv.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat([location.href]);"
    )
    return [n for n in names if not (n.startswith(base) or n.startswith("data:")
                                     or n.startswith("blob:"))]


VIDEO_STATE_JS = """
const v = arguments[0];
return {src: v.currentSrc || v.src || '', ready: v.readyState, duration: v.duration,
        error: v.error ? v.error.code : null};
"""

VIDEO_SOURCES_JS = """
const v = arguments[0];
const list = Array.from(v.querySelectorAll('source')).map(s => ({src: s.src, type: s.type}));
if (v.getAttribute('src')) list.push({src: v.src, type: v.getAttribute('type') || ''});
return list.map(s => Object.assign(s, {can: v.canPlayType(s.type || 'video/mp4')}));
"""


def check_videos(drv, base: str, root: Path, metadata_s: float = 30) -> int:
    """Assert every <video> on the current page is playable (its metadata loaded within
    ``metadata_s``); return how many were checked."""
    from selenium.webdriver.common.by import By

    videos = drv.find_elements(By.TAG_NAME, "video")
    for video in videos:
        sources = drv.execute_script(VIDEO_SOURCES_JS, video)
        assert sources, "a <video> without src or <source>"
        for source in sources:
            url = source["src"]
            assert url.startswith(base), f"video not served locally: {url}"
            rel = urllib.parse.unquote(urllib.parse.urlparse(url).path).lstrip("/")
            assert (root / rel).is_file(), f"video file missing: {rel}"
            assert source["can"], f"chromium cannot play {rel} (type {source['type']!r})"
        drv.execute_script(
            "const v = arguments[0]; if (v.readyState === 0) {v.preload = 'metadata'; v.load();}",
            video,
        )
        deadline = time.monotonic() + metadata_s
        state = drv.execute_script(VIDEO_STATE_JS, video)
        while state["ready"] < 1 and state["error"] is None and time.monotonic() < deadline:
            time.sleep(0.2)
            state = drv.execute_script(VIDEO_STATE_JS, video)
        assert state["error"] is None, f"{state['src']}: MediaError code {state['error']}"
        assert state["ready"] >= 1, f"{state['src']}: metadata never loaded"
        assert state["duration"] and state["duration"] > 0, f"{state['src']}: zero duration"
    return len(videos)


def test_index_renders_the_book(driver, book_server):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(book_server + "/index.html")
    # index.html is a redirect to the root page: wait until that page has fully loaded.
    WebDriverWait(driver, 20).until(
        lambda d: d.current_url.endswith("/book/intro.html")
        and d.execute_script("return document.readyState") == "complete"
    )
    assert BOOK_TITLE in driver.title
    from selenium.webdriver.common.by import By

    body = driver.find_element(By.TAG_NAME, "body").text
    assert "Backends" in body
    nav = driver.find_element(By.CSS_SELECTOR, "nav.bd-links, #bd-docs-nav, .bd-sidebar").text
    for caption in ("Getting started", "Training", "Acceptance", "Runtime and performance",
                    "Appendices"):
        assert caption in nav, f"sidebar lacks the part {caption!r}"
    assert severe_console_errors(driver) == []


@pytest.mark.parametrize("doc", toc_docs())
def test_page_loads_cleanly(driver, book_server, doc):
    from selenium.webdriver.common.by import By

    driver.get_log("browser")  # drop messages of earlier pages
    driver.get(f"{book_server}/{doc}.html")
    h1 = driver.find_element(By.CSS_SELECTOR, "article.bd-article h1").text
    assert page_title(doc) in h1
    check_videos(driver, book_server, HTML)
    assert foreign_requests(driver, book_server) == [], "the page fetched something remote"
    assert severe_console_errors(driver) == []
    text = driver.find_element(By.CSS_SELECTOR, "article.bd-article").text
    assert "Traceback (most recent call last)" not in text, "a cell printed a traceback"
    words = sorted({m.group(0) for m in FORBIDDEN_WORDS.finditer(text)})
    assert words == [], f"the page says {words}: name the machine, the run record and its date"


def test_debian_chromium_plays_h264_mp4(driver, tmp_path):
    """Self-check of the video test: Chromium must play the H.264 MP4s the book embeds.

    Makes a one-second H.264 clip with the ffmpeg that imageio-ffmpeg ships, and a page that
    embeds it the way the chapters do; the same checks must pass, and a broken file must fail.
    """
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    subprocess.run(
        [ffmpeg, "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25",
         "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
         str(tmp_path / "clip.mp4")],
        check=True, timeout=120,
    )
    (tmp_path / "broken.mp4").write_bytes(b"\x00" * 2048)
    page = '<html><body><h1>v</h1><video controls preload="metadata">' \
           '<source src="{}" type="video/mp4"></video></body></html>'
    (tmp_path / "good.html").write_text(page.format("clip.mp4"))
    (tmp_path / "bad.html").write_text(page.format("broken.mp4"))
    proc, base = serve(tmp_path)
    try:
        h264 = 'video/mp4; codecs="avc1.42E01E"'
        assert driver.execute_script(
            "return document.createElement('video').canPlayType(arguments[0])", h264
        ), "Debian chromium reports no H.264 support"
        driver.get(base + "/good.html")
        assert check_videos(driver, base, tmp_path) == 1
        driver.get(base + "/bad.html")
        # Chromium neither loads nor rejects a file of zeros: it stays at readyState 0, so the
        # check fails by its deadline, which need not be the real pages' 30 s.
        with pytest.raises(AssertionError, match="metadata never loaded|MediaError"):
            check_videos(driver, base, tmp_path, metadata_s=3)
    finally:
        stop(proc)


def part_pages() -> list[str]:
    """The front page and the first page of every part of the table of contents."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    return [toc["root"]] + [part["chapters"][0]["file"] for part in toc.get("parts", [])]


# A table wider than the text column is fine inside an element that scrolls it horizontally
# (the theme's scrollable-table wrapper, a notebook output area); anywhere else it spills over
# the margin or the sidebar, and the reader cannot see its last columns.
OVERFLOWING_TABLES_JS = """
const article = document.querySelector('article.bd-article') || document.body;
const limit = article.getBoundingClientRect().right + 1;
const bad = [];
for (const table of article.querySelectorAll('table')) {
  if (table.getBoundingClientRect().right <= limit) continue;
  let el = table.parentElement, contained = false;
  while (el && el !== document.body) {
    const style = getComputedStyle(el);
    if (['auto', 'scroll', 'hidden'].includes(style.overflowX)
        && el.getBoundingClientRect().right <= limit) { contained = true; break; }
    el = el.parentElement;
  }
  if (!contained) bad.push((table.innerText || '').trim().slice(0, 60));
}
return bad;
"""


@pytest.mark.parametrize("doc", part_pages())
def test_desktop_layout_has_no_overflowing_table(driver, book_server, doc, tmp_path):
    driver.set_window_size(1280, 900)  # a desktop browser window
    driver.get(f"{book_server}/{doc}.html")
    shot = tmp_path / f"{doc.replace('/', '_')}.png"
    assert driver.save_screenshot(str(shot)), "chromium took no screenshot"
    assert shot.stat().st_size > 10_000, "the screenshot is blank"
    assert driver.execute_script(OVERFLOWING_TABLES_JS) == [], (
        "tables wider than the text column and not inside a scroll container"
    )


VIDEO_PLAY_JS = """
const v = arguments[0];
v.muted = true;  // autoplay without a user gesture is allowed for muted media
const p = v.play();
if (p && p.catch) p.catch(() => {});
"""


def test_front_page_video_plays(driver, book_server):
    from selenium.webdriver.common.by import By

    driver.get(f"{book_server}/{part_pages()[0]}.html")
    videos = driver.find_elements(By.CSS_SELECTOR, "article.bd-article video")
    if not videos:
        pytest.skip("the front page has no <video> element yet (the walker video goes where "
                    "book/intro.md says WALKER-VIDEO)")
    video = videos[0]
    driver.execute_script(VIDEO_PLAY_JS, video)
    deadline = time.monotonic() + 30
    state = driver.execute_script(VIDEO_STATE_JS, video)
    while state["ready"] < 2 and state["error"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
        state = driver.execute_script(VIDEO_STATE_JS, video)
    assert state["error"] is None, f"{state['src']}: MediaError code {state['error']}"
    assert state["ready"] >= 2, f"{state['src']}: readyState {state['ready']} after 30 s"
