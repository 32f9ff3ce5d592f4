#!/usr/bin/env python3
"""Dynamic contact check for the ROCm stack.

A thin CLI over ``mjlab_microduck.cli.contact_check`` (``microduck contact-check``).

Drops a 5 cm sphere from z=0.2 m onto a plane with MuJoCo Warp and passes when it lands.
Prints ``final_z=... max_contacts=...`` either way; exit 0 pass, 1 fail, 2 refused/bad input.

    python scripts/check_rocm_contacts.py --device cuda:0 --require-hip
"""

from mjlab_microduck.cli.contact_check import main

if __name__ == "__main__":
    raise SystemExit(main())
