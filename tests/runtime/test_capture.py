"""Holding what Python and native code print (mjlab_microduck.runtime.capture)."""

from __future__ import annotations

import os
import sys

from mjlab_microduck.runtime.capture import held_output


def test_native_and_python_output_are_held(capfd):
    with held_output((1, 2)) as held:
        print("from python")
        os.write(2, b"from C, fd 2\n")  # what Warp's fprintf(stderr, ...) does
        os.write(1, b"from C, fd 1\n")
    assert sorted(held.lines()) == ["from C, fd 1", "from C, fd 2", "from python"]
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_echo_passes_the_text_on_unless_discarded(capfd):
    with held_output((2,), echo=True):
        os.write(2, b"set-up chatter\n")
    assert capfd.readouterr().err == "set-up chatter\n"
    with held_output((2,), echo=True) as held:
        os.write(2, b"dropped\n")
        held.discard()
    assert capfd.readouterr().err == ""


def test_streams_are_restored_after_an_error():
    before = (sys.stdout, sys.stderr)
    try:
        with held_output((1, 2)):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert (sys.stdout, sys.stderr) == before


def test_warp_initialises_without_writing_to_the_streams(capfd):
    import subprocess
    import sys

    # A fresh interpreter: Warp initialises once per process.
    code = (
        "from mjlab_microduck.runtime.capture import init_warp_quietly\n"
        "lines = init_warp_quietly()\n"
        "import sys; sys.stderr.write(f'held {len(lines)} lines; again {init_warp_quietly()}')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    assert proc.stdout == ""
    held, again = proc.stderr.split("; ")
    assert int(held.split()[1]) >= 1  # at least Warp's "initialized" banner was held
    assert again == "again []"
