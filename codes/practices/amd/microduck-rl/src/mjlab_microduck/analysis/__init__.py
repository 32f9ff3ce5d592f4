"""Pure analysis of run outputs (numpy and pandas only, no simulator)."""
