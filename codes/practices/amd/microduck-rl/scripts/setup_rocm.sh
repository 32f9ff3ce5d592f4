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
$TASK_ID and the sphere contact check passes. Last it runs the IPC-event probe
(chapter 8) and ends with both verdicts; a failing probe is a warning naming the
multi-process features it affects, not a failed set-up.

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
                               Dropped with a warning when the fork's build_lib.py --help
                               lists no --hipcc-options.
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
# The options passed to build_lib.py, each with its value. Fork revisions differ in the options
# their build_lib.py defines (ROCm/warp builds have been run with --hipcc-options, while
# AMD-Ecosystem/warp c40e849f's build_lib.py has none), and argparse stops an unknown one with
# exit status 2, so before building the script asks build_lib.py --help and keeps only what it
# lists (see check_build_lib_options).
BUILD_OPTIONS=(--rocm-path --hip-arch --jobs)
BUILD_VALUES=("$ROCM_PATH" "$TARGET" "$jobs")
if [[ -n $HIPCC_OPTIONS ]]; then
    BUILD_OPTIONS+=(--hipcc-options)
    BUILD_VALUES+=("$HIPCC_OPTIONS")
fi
build_flags=()
compose_build_flags() {
    local i
    build_flags=()
    for i in "${!BUILD_OPTIONS[@]}"; do
        if [[ ${BUILD_OPTIONS[i]} == --hipcc-options ]]; then
            # Joined with '=': a value such as -O0 would otherwise read as an option of its own.
            build_flags+=("--hipcc-options=${BUILD_VALUES[i]}")
        else
            build_flags+=("${BUILD_OPTIONS[i]}" "${BUILD_VALUES[i]}")
        fi
    done
}
compose_build_flags
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

# True when build_lib.py's --help text lists OPTION (as "  --opt VALUE", "[--opt", "-j, --opt").
build_lib_lists() {
    local help=$1 option=$2
    local pattern="(^|[[:space:],[])${option}([[:space:]=,]|\$)"
    [[ $help =~ $pattern ]]
}

# Ask the checked-out build_lib.py which options it defines, and drop the ones it does not:
# --hipcc-options, --rocm-path (ROCM_PATH is exported) and --jobs have defaults in build_lib,
# so the build goes on without them with a warning; without --hip-arch it cannot target the
# GPU, so the run stops. Runs after the dependencies are installed: build_lib.py imports NumPy.
check_build_lib_options() {
    local help status=0 i option joined listed=() kept_options=() kept_values=()
    printf '     - asking build_lib.py --help which options ROCm Warp %s defines\n' "$WARP_COMMIT"
    help=$(cd -- "$WARP_DIR" && "../../$PYTHON" build_lib.py --help 2>&1) || status=$?
    if ((status != 0)); then
        help=${help%$'\n'}
        die "$EXIT_STEP_FAILED" "build_lib.py --help failed with exit status $status in $WARP_DIR (ROCm Warp commit $WARP_COMMIT): ${help##*$'\n'}"
    fi
    # Checked first: without it nothing else matters, and the run stops with this one line.
    build_lib_lists "$help" --hip-arch ||
        die "$EXIT_STEP_FAILED" "build_lib.py of ROCm Warp commit $WARP_COMMIT defines no --hip-arch option (build_lib.py --help does not list it), so Warp cannot be built for $TARGET: pin a ROCm Warp commit whose build_lib.py has --hip-arch"
    for i in "${!BUILD_OPTIONS[@]}"; do
        option=${BUILD_OPTIONS[i]}
        if build_lib_lists "$help" "$option"; then
            listed+=("$option yes")
            kept_options+=("$option")
            kept_values+=("${BUILD_VALUES[i]}")
        else
            listed+=("$option no")
            case $option in
                --hipcc-options) warn "build_lib.py of ROCm Warp commit $WARP_COMMIT defines no --hipcc-options option (build_lib.py --help does not list it): building without --hipcc-options=${BUILD_VALUES[i]}, with build_lib's own hipcc options (the reference build used -O0)" ;;
                --rocm-path) warn "build_lib.py of ROCm Warp commit $WARP_COMMIT defines no --rocm-path option (build_lib.py --help does not list it): building without it; build_lib finds ROCm itself (ROCM_PATH=$ROCM_PATH is exported)" ;;
                *) warn "build_lib.py of ROCm Warp commit $WARP_COMMIT defines no $option option (build_lib.py --help does not list it): building without $option ${BUILD_VALUES[i]}, with build_lib's default" ;;
            esac
        fi
    done
    printf -v joined '%s, ' "${listed[@]}"
    note "build_lib.py --help lists: ${joined%, }"
    BUILD_OPTIONS=("${kept_options[@]}")
    BUILD_VALUES=("${kept_values[@]}")
    compose_build_flags
}

if [[ $WARP_BUILD == reuse ]]; then
    note "ROCm Warp: already built for $TARGET ($WARP_STAMP matches); not rebuilt"
else
    if ((DRY_RUN)); then
        note "before building, build_lib.py --help is asked which options it defines; an option it does not list is dropped with a warning (--hipcc-options, --rocm-path, --jobs), a missing --hip-arch stops the run"
    else
        check_build_lib_options
    fi
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
"""Verify the ROCm stack that setup_rocm.sh installed.

argv: module folder, venv, task id, verdicts file. The checks print "ok"/"FAIL" lines; the
contact check's and the IPC-event probe's verdicts also go to the verdicts file, one a line,
which setup_rocm.sh prints last ("warning: " lines as warnings on stderr).
"""

import json
import subprocess
import sys
from pathlib import Path

module_dir, venv_dir, task_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
verdicts_file = Path(sys.argv[4])
failed = []
verdicts = []
# What a failing IPC-event probe puts at risk: whatever reuses one interprocess GPU event. For
# the multi-GPU launcher that is not established either way on ROCm (chapter 10), so it is
# named as a run to probe before, not as a known failure.
MULTI_PROCESS = (
    "multi-process features that reuse an interprocess GPU event, such as pipelines that hand "
    "GPU batches between processes with torch.cuda.Event(interprocess=True); and run the probe "
    "before multi-GPU training (microduck train --gpu-ids, one process per GPU), whose use of "
    "interprocess events on ROCm this book has not checked"
)


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
    verdicts.append(f"contact check: {detail}")
else:
    report("contact check", False, f"{contact_script} not found")
    verdicts.append(f"contact check: FAIL ({contact_script} not found)")

# The IPC-event probe (chapter 8): whether this HIP runtime survives reusing one interprocess
# event past its 32 signal slots. Single-process training does not need it, so a failure is a
# warning naming what it affects, not a failed set-up.
probe_command = [
    str(venv_dir / "bin" / "python"), "-m", "mjlab_microduck.cli", "probe",
    "--reuses", "100", "--ring", "1", "--json",
]
probe = None
try:
    done = subprocess.run(probe_command, capture_output=True, text=True, timeout=300, check=False)
    text = done.stdout
    # The JSON is the last thing printed, starting on a line of its own; anything a library
    # logs on import comes before it.
    start = 0 if text.startswith("{") else text.rfind("\n{") + 1
    probe = json.loads(text[start:]) if "{" in text else None
    no_verdict = f"exit status {done.returncode}: {tail(done.stdout + done.stderr)}"
except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
    no_verdict = f"{type(exc).__name__}: {exc}"
status = probe.get("status") if isinstance(probe, dict) else None
if status == "ok" and probe.get("conclusive"):
    detail = (
        f"ok, {probe['reuses_done']} reuses of one interprocess event past the 32-slot limit "
        f"(hip {probe.get('runtime_version')})"
    )
    print(f"  ok   IPC event reuse: {detail}", flush=True)
    verdicts.append(f"IPC event probe: {detail}")
else:
    if status == "failed":
        failed_at, ring = probe.get("failed_at"), probe.get("ring_size") or 1
        # Reuse 32 x ring size is the signature of the 32-slot bug; anything else is reported
        # as a failure without naming a cause.
        cause = (
            "the 32-slot interprocess-event bug of chapter 8"
            if failed_at == 32 * ring
            else "an interprocess-event failure (not at the 32-slot limit)"
        )
        what = (
            f"FAILED at reuse {failed_at} on hip {probe.get('runtime_version')} "
            f"({probe.get('error')}): this runtime shows {cause}"
        )
    elif status in ("ok", "skipped"):
        why = probe.get("reason") or f"only {probe.get('reuses_done')} reuses"
        what = f"{status} ({why}): interprocess event reuse is unverified on this machine"
    else:
        what = f"gave no verdict ({no_verdict}): interprocess event reuse is unverified"
    line = (
        f"IPC event probe {what}. Affected: {MULTI_PROCESS}. Single-process training is not "
        "affected. Re-check with: microduck doctor --ipc-probe --require-ipc-events"
    )
    print(f"  WARN IPC event reuse: {what}", flush=True)
    verdicts.append(f"warning: {line}")

try:
    verdicts_file.write_text("".join(f"{v}\n" for v in verdicts))
except OSError as exc:
    print(f"  (could not write {verdicts_file}: {exc})", flush=True)

if failed:
    print(f"verification failed: {', '.join(failed)}", file=sys.stderr)
    sys.exit(1)
print("verification passed")
PY

# The contact check's and the IPC probe's verdicts, kept for the reader and printed last.
readonly VERDICTS=$SRC_DIR/verdicts.txt
print_verdicts() {
    local line
    [[ -s $VERDICTS ]] || return 0
    printf '\nVerdicts (also in %s):\n' "$VERDICTS"
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line == "warning: "* ]]; then
            warn "${line#warning: }"
        else
            printf '  %s\n' "$line"
        fi
    done <"$VERDICTS"
}

STEP_NO=$((STEP_NO + 1))
verify_description="Verify in $VENV_DIR: torch sees a HIP device, Warp's device is HIP, list-envs lists $TASK_ID, scripts/check_rocm_contacts.py --device cuda:0 --require-hip passes; then the IPC-event probe (microduck probe --reuses 100 --ring 1), whose failure is a warning"
verify_status=0
if ((DRY_RUN)); then
    printf '%3d. %s\n' "$STEP_NO" "$verify_description"
    printf '     $ %s - . %s %s %s <<'\''PY'\''  (verification code: see this script)\n' "$PYTHON" "$VENV_DIR" "$TASK_ID" "$VERDICTS"
else
    printf '==> [%d] %s\n' "$STEP_NO" "$verify_description"
    # Emptied first: verdicts of an earlier run must not be printed as this run's.
    : >"$VERDICTS"
    "$PYTHON" - . "$VENV_DIR" "$TASK_ID" "$VERDICTS" <<<"$VERIFY_PY" || verify_status=$?
fi
if ((verify_status != 0)); then
    print_verdicts
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
    # Last, so the reader sees them: run the contact check first on any new ROCm machine, and
    # the IPC probe before any multi-process training (chapters 2 and 8).
    print_verdicts
fi
