"""MicroDuck velocity task for mjlab, with the ROCm compatibility fixes used by the book.

Importing the package does nothing: it patches nothing, registers nothing and imports neither
torch nor mjlab. The tasks register through mjlab's ``mjlab.tasks`` entry point, which imports
:mod:`mjlab_microduck.tasks`; that module installs the compatibility hooks first. Code that
needs the hooks without the tasks calls :func:`mjlab_microduck.compat.install_all`.

Layers, each importing only the ones before it:

========== =========================================================================
robot      the robot built from published figures, and its mjlab entity config
runs       run records: schema, atomic storage, summary records, TensorBoard export
analysis   pure functions of records: summaries, acceptance rules, scaling, response
compat     the run-time hooks for mjlab/Warp on ROCm, and the fault injection
tasks      env and RL configs, tuning presets, MDP terms; registration with mjlab
runtime    read-only machine facts: backend, provenance, doctor, contact check, probes
jobs       work that writes records: train, replay, recipe, bench, book build times
book       what only the notebooks use: results lookup, live runs, tables, plots, prose,
           the front page's chapter times
cli        the ``microduck`` command
========== =========================================================================
"""
