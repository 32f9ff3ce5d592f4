#!/usr/bin/env python3
"""Replay a checkpoint in its training environment (thin CLI: ``microduck replay``).

One env, fixed seed and command, N frames; writes ``trajectory.csv``, an H.264 ``replay.mp4``
and a ``record.json`` with the metrics into a new run directory under ``--out``. Bad input
(missing or corrupt checkpoint, shapes that do not fit the task, frames < 1, unknown task)
prints one line on stderr, exits 2 and writes nothing.

    python scripts/render_mjlab_checkpoint.py book/results/h200_train_500/model_499.pt \
        --lin-vel-x 0.15 --frames 200 --seed 42 --out logs/replays
"""

from mjlab_microduck.cli.replay import main

if __name__ == "__main__":
    raise SystemExit(main())
