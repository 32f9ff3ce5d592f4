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
