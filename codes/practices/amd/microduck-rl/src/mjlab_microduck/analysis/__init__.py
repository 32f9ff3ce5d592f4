"""Pure functions of run records: training summaries, acceptance rules, scaling, command response.

Nothing here imports torch or mjlab; every function reads records (or tables made from them).
"""
