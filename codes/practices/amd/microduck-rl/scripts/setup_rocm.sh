#!/usr/bin/env bash
# Build the MicroDuck training stack for an AMD GPU: an isolated Python 3.12 environment with
# AMD's PyTorch wheels, the ROCm forks of Warp and MuJoCo Warp built from source at pinned
# commits, mjlab and this package. Run `setup_rocm.sh --help` for usage.
#
# Why a script and not `uv sync`: the ROCm Warp fork has no wheel; its native runtime must be
# compiled with hipcc for the GPU's gfx target, and a resolver left to mjlab's metadata would
# install NVIDIA's warp-lang and mujoco-warp from PyPI over the ROCm builds. The environment
# and the sources live inside the module folder (.venv-rocm/, .rocm-src/), so the repository's
# CPU/CUDA environment is untouched.
set -euo pipefail

readonly WARP_URL=https://github.com/ROCm/warp
readonly WARP_COMMIT=6530951390fa905321011dedd074572e4cdce00b
readonly MJWARP_URL=https://github.com/ROCm/mujoco_warp
readonly MJWARP_COMMIT=9229bb9d1a698c9464df862a915b46899720338c
readonly PYTHON_VERSION=3.12
readonly TASK_ID=Mjlab-Velocity-Flat-MicroDuck
readonly TARGET_PATTERN='^gfx[0-9a-f]{3,4}$'

readonly EXIT_USAGE=2
readonly EXIT_PLATFORM=3
readonly EXIT_NO_UV=4
readonly EXIT_NO_GIT=5
readonly EXIT_NO_ROCMINFO=6
readonly EXIT_NO_HIPCC=7
readonly EXIT_NO_TARGET=8
readonly EXIT_SOURCE_TREE=9
readonly EXIT_LAYOUT=10
readonly EXIT_STEP_FAILED=11
readonly EXIT_VERIFY_FAILED=12

usage() {
    local text
    # read + printf rather than cat: the script needs nothing beyond bash and the tools it checks.
    read -r -d '' text <<EOF || true
Usage: setup_rocm.sh [--dry-run] [GFX_TARGET]

Builds .venv-rocm/ (Python $PYTHON_VERSION) and .rocm-src/ inside the module folder
$MODULE_DIR
and checks the result: torch sees a HIP device, Warp's device is HIP, mjlab lists
$TASK_ID and the sphere contact check passes.

  GFX_TARGET   GPU target to build Warp for, e.g. gfx1201, gfx942, gfx90a.
               Default: the first gfx agent that rocminfo lists.
  -n, --dry-run
               Print the numbered plan (every command, with the target) and change
               nothing. With GFX_TARGET given it needs neither ROCm nor uv: missing
               tools are reported as "missing (required for a real run)".
  -h, --help   Show this help.

Environment:
  ROCM_PATH                    ROCm SDK root (default /opt/rocm); needs bin/hipcc.
  HIP_VISIBLE_DEVICES          Passed through unchanged to torch and Warp.
  MICRODUCK_WARP_HIPCC_OPTIONS Extra hipcc options for Warp's build (default -O0, as in
                               the reference build; set it empty to use build_lib's own).
  MICRODUCK_ROCM_REQUIREMENTS  Requirements file (default: the nearest
                               requirements-rocm.txt at or above the module folder).

Re-running is safe: clones at the pinned commit are reused, others are moved to it;
a source tree with local changes is refused. Warp is rebuilt only when its commit,
target, ROCm path or hipcc options change (delete .rocm-src/warp.build-stamp to force).

Exit status: 0 ok, $EXIT_USAGE usage or invalid target, $EXIT_PLATFORM not x86_64 Linux, $EXIT_NO_UV uv missing, $EXIT_NO_GIT git missing,
$EXIT_NO_ROCMINFO rocminfo missing, $EXIT_NO_HIPCC hipcc missing, $EXIT_NO_TARGET no gfx target found, $EXIT_SOURCE_TREE managed source tree unusable,
$EXIT_LAYOUT module folder or requirements file not found, $EXIT_STEP_FAILED a step failed, $EXIT_VERIFY_FAILED verification failed.
EOF
    printf '%s\n' "$text"
}

die() {
    local status=$1
    shift
    printf 'setup_rocm.sh: error: %s\n' "$*" >&2
    exit "$status"
}

warn() {
    printf 'setup_rocm.sh: warning: %s\n' "$*" >&2
}

# The module folder is found from the script's own location, so the script can be run from
# anywhere and a copy of the module folder (as the tests make) is set up in place.
script_path=${BASH_SOURCE[0]}
[[ $script_path == */* ]] || script_path=./$script_path
MODULE_DIR=$(cd -- "${script_path%/*}/.." && pwd -P)
readonly MODULE_DIR

DRY_RUN=0
TARGET=""
TARGET_SOURCE=""
while (($#)); do
    case $1 in
        -h | --help)
            usage
            exit 0
            ;;
        -n | --dry-run) DRY_RUN=1 ;;
        -*) die "$EXIT_USAGE" "unknown option: $1 (see --help)" ;;
        *)
            [[ -z $TARGET ]] || die "$EXIT_USAGE" "only one GFX_TARGET may be given (got $TARGET and $1)"
            TARGET=$1
            TARGET_SOURCE="given as argument"
            ;;
    esac
    shift
done
readonly DRY_RUN

# Checked before anything else: a typo such as sm_90 or gfx12 would otherwise only surface
# as a compile error deep inside Warp's build.
if [[ -n $TARGET && ! $TARGET =~ $TARGET_PATTERN ]]; then
    die "$EXIT_USAGE" "invalid gfx target '$TARGET': expected gfx followed by 3-4 hex digits, e.g. gfx1201, gfx942, gfx90a"
fi

[[ -f $MODULE_DIR/pyproject.toml ]] ||
    die "$EXIT_LAYOUT" "$MODULE_DIR is not the module folder (no pyproject.toml): keep setup_rocm.sh in its scripts/ folder"

# Exported so that Warp's build and, later, its runtime compiler use the SDK checked here.
export ROCM_PATH=${ROCM_PATH:-/opt/rocm}
readonly VENV_DIR=.venv-rocm
readonly PYTHON=$VENV_DIR/bin/python
readonly SRC_DIR=.rocm-src
readonly WARP_DIR=$SRC_DIR/warp
readonly MJWARP_DIR=$SRC_DIR/mujoco_warp
readonly WARP_STAMP=$SRC_DIR/warp.build-stamp
# The reference build (whose figures the book compares against) compiled Warp's runtime with
# hipcc -O0; keep that unless the caller says otherwise (an empty value drops the option).
HIPCC_OPTIONS=${MICRODUCK_WARP_HIPCC_OPTIONS--O0}
readonly HIPCC_OPTIONS
# Relative paths below are relative to the module folder: the plan reads the same on every
# machine and each printed command can be pasted there as it is.
cd -- "$MODULE_DIR"

# In a dry run a missing prerequisite is reported, not fatal: the book prints the plan on
# machines without ROCm. A real run stops at the first one.
BLOCKERS=()
prerequisite() {
    local name=$1 status=$2 found=$3 detail=$4
    if [[ $found == yes ]]; then
        printf '  %-9s %s\n' "$name" "$detail"
    elif ((DRY_RUN)); then
        printf '  %-9s missing (required for a real run): %s\n' "$name" "$detail"
        BLOCKERS+=("$name: $detail")
    else
        die "$status" "$name not found: $detail"
    fi
}

if ((DRY_RUN)); then
    printf 'setup_rocm.sh dry run for %s (nothing is changed)\n' "$MODULE_DIR"
else
    printf 'setup_rocm.sh: setting up %s\n' "$MODULE_DIR"
fi
printf 'Prerequisites:\n'

# AMD publishes these PyTorch wheels for CPython 3.12 on x86_64 Linux only.
os_name=$(uname -s)
machine=$(uname -m)
if [[ $os_name == Linux && $machine == x86_64 ]]; then
    prerequisite platform "$EXIT_PLATFORM" yes "$os_name $machine"
elif ((DRY_RUN)); then
    printf '  %-9s %s %s: refused by a real run (AMD wheels are x86_64 Linux only)\n' platform "$os_name" "$machine"
    BLOCKERS+=("platform: $os_name $machine is not x86_64 Linux")
else
    die "$EXIT_PLATFORM" "unsupported platform $os_name $machine: AMD's ROCm PyTorch wheels need x86_64 Linux"
fi

have() { command -v "$1" >/dev/null 2>&1; }

if have uv; then
    prerequisite uv "$EXIT_NO_UV" yes "$(command -v uv)"
else
    prerequisite uv "$EXIT_NO_UV" no "uv is not on PATH (creates the Python $PYTHON_VERSION environment; see https://docs.astral.sh/uv/)"
fi
HAVE_GIT=0
if have git; then
    HAVE_GIT=1
    prerequisite git "$EXIT_NO_GIT" yes "$(command -v git)"
else
    prerequisite git "$EXIT_NO_GIT" no "git is not on PATH (clones the ROCm forks)"
fi
HAVE_ROCMINFO=0
if have rocminfo; then
    HAVE_ROCMINFO=1
    prerequisite rocminfo "$EXIT_NO_ROCMINFO" yes "$(command -v rocminfo)"
elif [[ -z $TARGET ]]; then
    # Without rocminfo there is nothing to detect the target from, dry run or not.
    die "$EXIT_NO_ROCMINFO" "rocminfo not found on PATH: it is needed to detect the gfx target; install ROCm or pass the target (e.g. setup_rocm.sh --dry-run gfx1201)"
else
    prerequisite rocminfo "$EXIT_NO_ROCMINFO" no "rocminfo is not on PATH (lists the GPUs; part of ROCm)"
fi
if [[ -x $ROCM_PATH/bin/hipcc ]]; then
    prerequisite hipcc "$EXIT_NO_HIPCC" yes "$ROCM_PATH/bin/hipcc"
else
    prerequisite hipcc "$EXIT_NO_HIPCC" no "$ROCM_PATH/bin/hipcc is not executable (Warp's HIP build needs the full ROCm SDK; set ROCM_PATH)"
fi

# The GPU agents rocminfo lists, in its order. Each agent has a line "Name: gfx1201"; the
# ISA lines ("Name: amdgcn-amd-amdhsa--gfx1201") and CPU agents do not match.
GPU_TARGETS=()
if ((HAVE_ROCMINFO)); then
    rocminfo_status=0
    rocminfo_output=$(rocminfo 2>&1) || rocminfo_status=$?
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*Name:[[:space:]]+(gfx[0-9a-z]+)[[:space:]]*$ ]]; then
            GPU_TARGETS+=("${BASH_REMATCH[1]}")
        fi
    done <<<"$rocminfo_output"
    if ((rocminfo_status != 0)); then
        warn "rocminfo exited with status $rocminfo_status (is /dev/kfd accessible to this user?)"
    fi
fi

if [[ -z $TARGET ]]; then
    ((${#GPU_TARGETS[@]})) ||
        die "$EXIT_NO_TARGET" "rocminfo lists no gfx GPU agent: check the GPU driver, or pass the target (e.g. setup_rocm.sh gfx1201)"
    TARGET=${GPU_TARGETS[0]}
    TARGET_SOURCE="auto-detected: first gfx agent listed by rocminfo"
    [[ $TARGET =~ $TARGET_PATTERN ]] ||
        die "$EXIT_NO_TARGET" "rocminfo's first gfx agent '$TARGET' is not a target name this script knows; pass the target explicitly"
fi
readonly TARGET
printf 'gfx target: %s (%s)\n' "$TARGET" "$TARGET_SOURCE"

if ((${#GPU_TARGETS[@]})); then
    printf 'GPUs listed by rocminfo: %d (%s)\n' "${#GPU_TARGETS[@]}" "${GPU_TARGETS[*]}"
fi
# rocminfo lists every agent whatever HIP_VISIBLE_DEVICES says, while torch and Warp only
# see the visible ones (renumbered from 0): say which GPU the verification's cuda:0 is.
if [[ -n ${HIP_VISIBLE_DEVICES+set} ]]; then
    printf 'HIP_VISIBLE_DEVICES=%s (passed through to torch and Warp; rocminfo lists all agents regardless)\n' "$HIP_VISIBLE_DEVICES"
    first_visible=${HIP_VISIBLE_DEVICES%%,*}
    if ((${#GPU_TARGETS[@]} > 1)); then
        if [[ $first_visible =~ ^[0-9]+$ ]] && ((first_visible < ${#GPU_TARGETS[@]})); then
            visible_target=${GPU_TARGETS[first_visible]}
            printf 'Several GPUs: cuda:0 is GPU %s (%s)\n' "$first_visible" "$visible_target"
            if [[ $visible_target != "$TARGET" ]]; then
                warn "Warp is built for $TARGET but the visible GPU is $visible_target: pass $visible_target as GFX_TARGET to build for it"
            fi
        else
            printf 'Several GPUs: cuda:0 is the device HIP_VISIBLE_DEVICES=%s names (not an index into rocminfo'\''s list)\n' "$HIP_VISIBLE_DEVICES"
        fi
    fi
elif ((${#GPU_TARGETS[@]} > 1)); then
    printf 'HIP_VISIBLE_DEVICES is not set: torch and Warp see all %d GPUs; cuda:0 is GPU 0 (%s). Set it to pick another.\n' \
        "${#GPU_TARGETS[@]}" "${GPU_TARGETS[0]}"
else
    printf 'HIP_VISIBLE_DEVICES is not set\n'
fi

# The nearest requirements-rocm.txt at or above the module folder: the repository keeps it
# at its root, a standalone copy of the module folder may keep it beside pyproject.toml.
find_requirements() {
    local dir=$MODULE_DIR up=""
    while :; do
        if [[ -f $dir/requirements-rocm.txt ]]; then
            printf '%srequirements-rocm.txt\n' "$up"
            return 0
        fi
        [[ $dir != / ]] || return 1
        dir=${dir%/*}
        dir=${dir:-/}
        up+="../"
    done
}
if [[ -n ${MICRODUCK_ROCM_REQUIREMENTS:-} ]]; then
    REQUIREMENTS=$MICRODUCK_ROCM_REQUIREMENTS
    [[ -f $REQUIREMENTS ]] || die "$EXIT_LAYOUT" "MICRODUCK_ROCM_REQUIREMENTS=$REQUIREMENTS: no such file"
else
    REQUIREMENTS=$(find_requirements) ||
        die "$EXIT_LAYOUT" "no requirements-rocm.txt at or above $MODULE_DIR (set MICRODUCK_ROCM_REQUIREMENTS)"
fi
readonly REQUIREMENTS

# Pins that must be installed without their dependencies live in the requirements file as
# "# no-deps: SPEC" lines, so every version is written down in one place.
NO_DEPS_SPECS=()
while IFS= read -r line || [[ -n $line ]]; do
    if [[ $line =~ ^#[[:space:]]*no-deps:[[:space:]]*([^[:space:]]+) ]]; then
        NO_DEPS_SPECS+=("${BASH_REMATCH[1]}")
    fi
done <"$REQUIREMENTS"
((${#NO_DEPS_SPECS[@]})) || die "$EXIT_LAYOUT" "$REQUIREMENTS has no '# no-deps: mjlab==...' line"
printf 'Requirements: %s (no-deps: %s)\n' "$REQUIREMENTS" "${NO_DEPS_SPECS[*]}"

# --- the plan --------------------------------------------------------------------------------
# Every action below goes through step(): a dry run prints it, a real run prints and runs it.
# All checks that can refuse (platform, tools, target, source trees) happen before the first
# step, so a refused run has changed nothing.

STEP_NO=0
show_command() {
    local workdir=$1 rendered
    shift
    printf -v rendered '%q ' "$@"
    rendered=${rendered% }
    if [[ $workdir != . ]]; then
        rendered="(cd $workdir && $rendered)"
    fi
    printf '     $ %s\n' "$rendered"
}

step() {
    local description=$1 workdir=$2 status=0
    shift 2
    STEP_NO=$((STEP_NO + 1))
    if ((DRY_RUN)); then
        printf '%3d. %s\n' "$STEP_NO" "$description"
        show_command "$workdir" "$@"
        return 0
    fi
    printf '==> [%d] %s\n' "$STEP_NO" "$description"
    show_command "$workdir" "$@"
    (cd -- "$workdir" && "$@") || status=$?
    ((status == 0)) || die "$EXIT_STEP_FAILED" "step $STEP_NO ($description) failed with exit status $status"
}

note() {
    printf '     - %s\n' "$*"
}

# Decide, for one managed source tree, what it takes to bring it to its pinned commit.
# Refuses a tree with local changes: those are somebody's work, and checking out another
# commit over them would lose it. Untracked files are ignored on purpose: Warp's build and
# editable installs leave them, and they do not block a checkout.
declare -A TREE_ACTION=()
inspect_tree() {
    local label=$1 dir=$2 commit=$3 changes head
    if [[ -e $dir && ! -d $dir/.git ]]; then
        TREE_ACTION[$dir]=refused
        if ((DRY_RUN)); then
            BLOCKERS+=("$label: $dir exists but is not a git checkout")
            return 0
        fi
        die "$EXIT_SOURCE_TREE" "managed source tree $dir exists but is not a git checkout: move it away and re-run"
    fi
    if [[ ! -d $dir/.git ]]; then
        TREE_ACTION[$dir]=clone
        return 0
    fi
    if ((!HAVE_GIT)); then
        # Only in a dry run (a real run has stopped already): the tree cannot be inspected.
        TREE_ACTION[$dir]=checkout
        return 0
    fi
    changes=$(git -C "$dir" status --porcelain --untracked-files=no) ||
        die "$EXIT_SOURCE_TREE" "git status failed in managed source tree $dir"
    if [[ -n $changes ]]; then
        TREE_ACTION[$dir]=refused
        changes=${changes//$'\n'/; }
        if ((DRY_RUN)); then
            BLOCKERS+=("$label: managed source tree $dir has local changes ($changes)")
            return 0
        fi
        die "$EXIT_SOURCE_TREE" "managed source tree $dir has local changes ($changes): commit, stash or discard them, then re-run"
    fi
    head=$(git -C "$dir" rev-parse HEAD 2>/dev/null) || head=""
    if [[ $head == "$commit" ]]; then
        TREE_ACTION[$dir]=reuse
    else
        TREE_ACTION[$dir]=checkout
    fi
}

inspect_tree "ROCm Warp" "$WARP_DIR" "$WARP_COMMIT"
inspect_tree "ROCm MuJoCo Warp" "$MJWARP_DIR" "$MJWARP_COMMIT"

# An existing environment is reused; it must be the Python the AMD wheels are built for.
VENV_ACTION=create
if [[ -x $PYTHON ]]; then
    VENV_ACTION=reuse
    venv_version=""
    if [[ -f $VENV_DIR/pyvenv.cfg ]]; then
        while IFS= read -r line; do
            if [[ $line =~ ^(version_info|version)[[:space:]]*=[[:space:]]*([0-9]+\.[0-9]+) ]]; then
                venv_version=${BASH_REMATCH[2]}
            fi
        done <"$VENV_DIR/pyvenv.cfg"
    fi
    if [[ $venv_version != "$PYTHON_VERSION" ]]; then
        if ((DRY_RUN)); then
            BLOCKERS+=("$VENV_DIR is Python ${venv_version:-unknown}, not $PYTHON_VERSION")
        else
            die "$EXIT_LAYOUT" "$VENV_DIR is Python ${venv_version:-unknown}, not $PYTHON_VERSION: remove it and re-run"
        fi
    fi
fi

# Warp's build takes minutes: skip it when the last successful build used the same commit,
# target, ROCm and options, and the tree was not moved in this run.
jobs=$(nproc 2>/dev/null) || jobs=4
build_flags=(--rocm-path "$ROCM_PATH" --hip-arch "$TARGET" --jobs "$jobs")
[[ -z $HIPCC_OPTIONS ]] || build_flags+=("--hipcc-options=$HIPCC_OPTIONS")
warp_stamp="commit=$WARP_COMMIT target=$TARGET rocm_path=$ROCM_PATH hipcc_options=$HIPCC_OPTIONS"
WARP_BUILD=build
if [[ ${TREE_ACTION[$WARP_DIR]} == reuse && -f $WARP_STAMP && $(<"$WARP_STAMP") == "$warp_stamp" ]]; then
    WARP_BUILD=reuse
fi

printf '\nPlan (paths relative to the module folder):\n'

checkout_tree() {
    local label=$1 url=$2 dir=$3 commit=$4
    case ${TREE_ACTION[$dir]} in
        reuse)
            note "$label: $dir is already at $commit; reused"
            return 0
            ;;
        refused)
            note "$label: $dir would be refused (see below)"
            return 0
            ;;
        clone)
            # A blobless clone: history for the commit lookup, file contents only for the
            # checked-out commit.
            step "Clone $label ($url)" . git clone --filter=blob:none --no-checkout "$url" "$dir"
            ;;
    esac
    # Fetched by hash: the pinned commit need not be on a branch the clone brought along.
    step "Fetch $label commit $commit" . git -C "$dir" fetch origin "$commit"
    step "Check out $label at $commit" . git -C "$dir" checkout --quiet --detach "$commit"
}

checkout_tree "ROCm Warp" "$WARP_URL" "$WARP_DIR" "$WARP_COMMIT"
checkout_tree "ROCm MuJoCo Warp" "$MJWARP_URL" "$MJWARP_DIR" "$MJWARP_COMMIT"

if [[ $VENV_ACTION == reuse ]]; then
    note "$VENV_DIR exists (Python $PYTHON_VERSION); reused"
else
    step "Create the isolated environment $VENV_DIR (Python $PYTHON_VERSION)" . \
        uv venv --python "$PYTHON_VERSION" "$VENV_DIR"
fi

# One resolver pass over every pinned package: AMD's torch, torchvision and triton are direct
# links in this file, so nothing else it resolves can bring in another torch. It also brings
# NumPy, which Warp's build script needs.
step "Install AMD's PyTorch wheels, NumPy, MuJoCo, mjlab's dependencies and the book toolchain" . \
    uv pip install --python "$PYTHON" -r "$REQUIREMENTS"

if [[ $WARP_BUILD == reuse ]]; then
    note "ROCm Warp: already built for $TARGET ($WARP_STAMP matches); not rebuilt"
else
    # build_lib.py compiles Warp's native runtime with hipcc for exactly this target (the
    # fork's default list, gfx942 and gfx950, covers no Radeon card).
    step "Build ROCm Warp's native runtime for $TARGET (then record $WARP_STAMP)" "$WARP_DIR" \
        "../../$PYTHON" build_lib.py "${build_flags[@]}"
    if ((!DRY_RUN)); then
        printf '%s\n' "$warp_stamp" >"$WARP_STAMP"
    fi
fi

# --no-deps: mjlab would ask the resolver for PyPI's warp-lang and mujoco-warp (NVIDIA builds),
# and this package for mujoco-warp; the ROCm builds installed here satisfy both. Their other
# dependencies came with the requirements file.
step "Install ROCm Warp, ROCm MuJoCo Warp, ${NO_DEPS_SPECS[*]} and this package without dependencies" . \
    uv pip install --python "$PYTHON" --no-deps -e "$WARP_DIR" -e "$MJWARP_DIR" "${NO_DEPS_SPECS[@]}" -e .

# All checks run in one Python process of the new environment, so a failure names the check
# that failed instead of stopping at the first one.
read -r -d '' VERIFY_PY <<'PY' || true
"""Verify the ROCm stack that setup_rocm.sh installed (argv: module folder, venv, task id)."""

import subprocess
import sys
from pathlib import Path

module_dir, venv_dir, task_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
failed = []


def report(name, ok, detail):
    print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        failed.append(name)


def tail(text, lines=5):
    return " | ".join(text.strip().splitlines()[-lines:])


try:
    import torch

    hip = torch.version.hip or ""
    available = bool(hip) and torch.cuda.is_available()
    detail = f"torch {torch.__version__}, torch.version.hip={hip or 'None (not a ROCm build)'}"
    if available:
        detail += f", cuda:0 = {torch.cuda.get_device_name(0)}"
    elif hip:
        detail += ", torch.cuda.is_available() is False"
    report("torch sees a HIP device", available, detail)
except Exception as exc:
    report("torch sees a HIP device", False, f"{type(exc).__name__}: {exc}")

try:
    import warp as wp

    wp.init()
    device = wp.get_device("cuda:0")
    is_hip = bool(getattr(device, "is_hip", False))
    arch = getattr(device, "arch_str", "unknown arch")
    detail = f"warp {wp.__version__}, {device} ({arch}), is_hip={is_hip}"
    report("Warp device is HIP", is_hip, detail)
except Exception as exc:
    report("Warp device is HIP", False, f"{type(exc).__name__}: {exc}")

# list-envs exits with the number of tasks it listed, so its status says nothing about
# success: judge by what it printed.
try:
    listing = subprocess.run(
        [str(venv_dir / "bin" / "list-envs")], capture_output=True, text=True, check=False
    )
    found = task_id in listing.stdout
    detail = f"listed (list-envs exit status {listing.returncode} = number of tasks)"
    if not found:
        detail = f"not listed; list-envs said: {tail(listing.stdout + listing.stderr)}"
    report(f"mjlab lists {task_id}", found, detail)
except OSError as exc:
    report(f"mjlab lists {task_id}", False, f"{type(exc).__name__}: {exc}")

contact_script = module_dir / "scripts" / "check_rocm_contacts.py"
if contact_script.is_file():
    contact_command = [str(venv_dir / "bin" / "python"), str(contact_script)]
    contact = subprocess.run(
        [*contact_command, "--device", "cuda:0", "--require-hip"],
        capture_output=True,
        text=True,
        check=False,
    )
    detail = tail(contact.stdout, 1) or f"exit status {contact.returncode}"
    if contact.returncode != 0:
        detail = f"exit status {contact.returncode}: {tail(contact.stdout + contact.stderr)}"
    report("contact check", contact.returncode == 0, detail)
else:
    report("contact check", False, f"{contact_script} not found")

if failed:
    print(f"verification failed: {', '.join(failed)}", file=sys.stderr)
    sys.exit(1)
print("verification passed")
PY

STEP_NO=$((STEP_NO + 1))
verify_description="Verify in $VENV_DIR: torch sees a HIP device, Warp's device is HIP, list-envs lists $TASK_ID, scripts/check_rocm_contacts.py --device cuda:0 --require-hip passes"
if ((DRY_RUN)); then
    printf '%3d. %s\n' "$STEP_NO" "$verify_description"
    printf '     $ %s - . %s %s <<'\''PY'\''  (verification code: see this script)\n' "$PYTHON" "$VENV_DIR" "$TASK_ID"
else
    printf '==> [%d] %s\n' "$STEP_NO" "$verify_description"
    "$PYTHON" - . "$VENV_DIR" "$TASK_ID" <<<"$VERIFY_PY" ||
        die "$EXIT_VERIFY_FAILED" "verification failed (see the FAIL lines above); the environment is in $MODULE_DIR/$VENV_DIR"
fi

if ((DRY_RUN)); then
    if ((${#BLOCKERS[@]})); then
        printf '\nA real run on this machine would stop at:\n'
        printf '  - %s\n' "${BLOCKERS[@]}"
    else
        printf '\nNo blockers found for a real run on this machine.\n'
    fi
    printf 'Dry run: nothing was changed.\n'
else
    printf '\nROCm environment ready: %s/%s (Warp built for %s)\n' "$MODULE_DIR" "$VENV_DIR" "$TARGET"
    printf 'Activate it with: source %s/%s/bin/activate\n' "$MODULE_DIR" "$VENV_DIR"
fi
