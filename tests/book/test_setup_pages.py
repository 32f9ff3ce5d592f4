"""Chapter 1's version table and its view of setup_rocm.sh's dry run."""

from __future__ import annotations

from mjlab_microduck.book import setup_pages

DRY_RUN = """setup_rocm.sh dry run for <module> (nothing is changed)
Prerequisites:
  uv          missing (required for a real run): uv is not on PATH
Plan (paths relative to the module folder):
  1. Clone ROCm Warp (https://github.com/ROCm/warp)
     $ git clone --filter=blob:none --no-checkout https://github.com/ROCm/warp .rocm-src/warp
  8. Install AMD's PyTorch wheels
     $ uv pip install -r requirements-rocm.txt
     - before building, build_lib.py --help is asked which options it defines
  9. Build ROCm Warp's native runtime for gfx1201
     $ (cd .rocm-src/warp && python build_lib.py --hip-arch gfx1201 --hipcc-options=-O0)
 10. Install without dependencies
 11. Verify
     $ python - <<'PY' (verification code: see this script)
Dry run: nothing was changed.
"""


def test_plan_steps_keeps_the_numbered_steps_and_the_commands_asked_for():
    assert setup_pages.plan_steps(DRY_RUN) == [
        "  1. Clone ROCm Warp (https://github.com/ROCm/warp)",
        "  8. Install AMD's PyTorch wheels",
        "  9. Build ROCm Warp's native runtime for gfx1201",
        " 10. Install without dependencies",
        " 11. Verify",
    ]
    steps = setup_pages.plan_steps(DRY_RUN, commands_of=["Build ROCm Warp", "Install without"])
    assert steps[3] == ("     $ (cd .rocm-src/warp && python build_lib.py --hip-arch gfx1201 "
                        "--hipcc-options=-O0)")
    # step 10 prints no command: the next step's is not taken for it
    assert steps[4:] == [" 10. Install without dependencies", " 11. Verify"]


def test_the_real_dry_run_plans_the_build_for_the_target_with_O0():
    plan = setup_pages.dry_run("gfx1201")
    assert plan.returncode == 0, plan.stderr
    steps = setup_pages.plan_steps(plan.stdout, commands_of=["Build ROCm Warp"])
    assert steps[0].strip().startswith("1. Clone ROCm Warp")
    (build,) = [line for line in steps if "build_lib.py" in line]
    assert "--hip-arch gfx1201" in build and "--hipcc-options=-O0" in build
    script = (setup_pages.module_dir() / "scripts" / "setup_rocm.sh").read_text()
    # the reason chapter 1 gives for -O0 is the script's own
    assert "The reference build (whose figures the book compares against) compiled" in script


def test_pins_reads_exact_pins_only(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# comment\ntorch==2.13.0\nrsl_rl_lib == 5.0.1  # note\n"
                            "scipy\ntensorboard>=2.20\n")  # fmt: skip
    assert setup_pages.pins(requirements) == {"torch": "2.13.0", "rsl-rl-lib": "5.0.1"}


def test_agrees_ignores_a_local_build_label():
    assert setup_pages.agrees("2.13.0+cpu", "2.13.0") is True
    assert setup_pages.agrees("2.9.1+rocm7.2.1", "2.13.0") is False
    assert setup_pages.agrees(None, "2.13.0") is None
    assert setup_pages.agrees("1.0", None) is None


def test_version_table_sets_installed_beside_pinned(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pandas==0.0.1\n")
    table = setup_pages.version_table(requirements, packages=["pandas", "no-such-package-xyz"])
    assert list(table.columns) == ["installed", "pinned (requirements.txt)", "agrees"]
    assert table.loc["pandas", "installed"] == setup_pages.installed_version("pandas")
    assert table.loc["pandas", "agrees"] is False
    assert table.loc["no-such-package-xyz"].isna().all()


def test_the_book_stack_is_pinned_in_requirements_txt():
    pinned = setup_pages.pins(setup_pages.requirements_file())
    assert set(setup_pages.BOOK_STACK) <= set(pinned)
