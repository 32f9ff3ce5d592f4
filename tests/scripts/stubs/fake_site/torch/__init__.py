"""Fake ``torch`` for tests/scripts/test_setup_rocm.py: only what setup_rocm.sh's verification
reads.

FAKE_TORCH_HIP sets ``torch.version.hip`` (empty: a CUDA or CPU build); FAKE_TORCH_GPU=0 makes
``torch.cuda.is_available()`` false, as on a machine whose GPU the runtime cannot open.
"""

import os
from types import SimpleNamespace

__version__ = "2.9.1+rocm7.2.1.lw.gitff65f5bc"
version = SimpleNamespace(hip=os.environ.get("FAKE_TORCH_HIP", "7.2.53211") or None)
cuda = SimpleNamespace(
    is_available=lambda: os.environ.get("FAKE_TORCH_GPU", "1") == "1",
    get_device_name=lambda index=0: "AMD Radeon AI PRO R9700",
)
