"""The package stays ruff-clean (its own pyproject config), as the package issue requires."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "codes" / "practices" / "amd" / "microduck-rl"


def test_ruff_check_is_clean_on_the_package_and_tests():
    ruff = Path(sys.executable).with_name("ruff")
    result = subprocess.run(
        [str(ruff), "check", "--config", str(PACKAGE / "pyproject.toml"),
         str(PACKAGE / "src"), str(PACKAGE / "scripts"), str(REPO / "tests")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
