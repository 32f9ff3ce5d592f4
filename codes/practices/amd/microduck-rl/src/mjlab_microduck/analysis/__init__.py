"""Pure functions of run records and run outputs: training summaries, acceptance rules,
scaling, command response, gait metrics.

Nothing here imports torch, mjlab or a simulator (numpy and pandas only); every function reads
records, or tables and trajectories made from them.
"""
