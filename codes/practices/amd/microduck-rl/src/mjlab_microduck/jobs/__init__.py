"""Jobs that run a policy in the simulator and write a run record."""
