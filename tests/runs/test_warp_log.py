"""Counting Warp's module loads in a trainer's log (runs/warp_log.py), on lines shaped like
those a training on an H200 printed (warp 1.13)."""

from __future__ import annotations

import pytest

from mjlab_microduck.runs import warp_log

# From the train.log of a training on an H200 (warp 1.13.0), with the lines around them.
LOG = """\
Warp 1.13.0 initialized:
   Kernel cache:
     /root/.cache/warp/1.13.0
Module mujoco_warp._src.smooth 4052998 load on device 'cuda:0' took 8546.14 ms  (compiled)
Module mujoco_warp._src.forward 7ab9926 load on device 'cuda:0' took 2.00 ms  (cached)
Module _tile_cholesky_factorize_solve__locals__cholesky_factorize_solve_ee4b9236 8a58cae \
load on device 'cuda:0' took 5021.10 ms  (compiled)
Module solve_init_jaref__locals__kernel_72b78f25 72b78f2 load on device 'cuda:0' \
took 0.66 ms  (cached)
Module mujoco_warp._src.ray load on device 'cpu' took 1200.00 ms  (compiled)
Module mujoco_warp._src.io 1a2b3c4 load on device 'cuda:0' (block_dim=256) took 3.50 ms  (cached)
                            Learning iteration 0/600
Module names are printed by warp, but this line is not a load
"""


def test_counts_loads_compilations_and_their_seconds():
    loads = warp_log.count_loads(LOG.splitlines())
    assert loads == warp_log.WarpLoads(loaded=6, compiled=3, compile_s=pytest.approx(14.76724))
    assert loads.summary() == {"warp_modules_loaded": 6, "warp_modules_compiled": 3,
                               "warp_compile_s": 14.77}  # fmt: skip


def test_a_warm_cache_compiles_nothing():
    warm = [line.replace("(compiled)", "(cached)") for line in LOG.splitlines()]
    assert warp_log.count_loads(warm) == warp_log.WarpLoads(loaded=6, compiled=0, compile_s=0.0)


def test_a_log_without_loads_and_a_missing_log_count_zero(tmp_path):
    assert warp_log.count_loads(["Learning iteration 0/2", ""]) == warp_log.WarpLoads()
    assert warp_log.count_log(tmp_path / "train.log") == warp_log.WarpLoads()
    (tmp_path / "train.log").write_text(LOG)
    assert warp_log.count_log(tmp_path / "train.log").compiled == 3


def test_summary_keys_are_the_declared_ones():
    assert tuple(warp_log.WarpLoads().summary()) == warp_log.SUMMARY_KEYS
