"""Read-only facts about this machine: provenance, the doctor, the contact check, probes."""
