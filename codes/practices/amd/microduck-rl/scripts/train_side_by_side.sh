#!/usr/bin/env bash
# Train several seeds of one task side by side on one GPU and gait-test their checkpoints as
# they are saved. A recipe is judged on three seeds; at 4096 envs one training uses a fraction
# of a large GPU, so three fit on one, each in its own process (under CUDA MPS when it can be
# started, which lets their kernels overlap).
#
# Usage: train_side_by_side.sh TASK ITERATIONS OUT_DIR [SEED ...]     (default seeds: 42 43 44)
# Environment:
#   NUM_ENVS [4096]  SAVE_INTERVAL [50]  DEVICE [cuda:0]
#   WATCH_EVERY [50]  WATCH_FROM [250]   gait-test every WATCH_EVERY-th checkpoint from
#                                        iteration WATCH_FROM on (WATCH_EVERY=0: no watcher)
#   STOP_ON_PASS [0]  1: the gait watcher stops a training at its first passing checkpoint
#                     (its record ends ok and names it), which frees the GPU for the others
#   WATCH_AFTER [0]   1: the gait watcher tests nothing until every training has ended, so a
#                     training timed for its walker has the GPU to itself (a GPU that does not
#                     run two processes' kernels at once slows a training while a test runs)
#   START_WATCH [0]   1: a second watcher start-tests the same checkpoints (the two fastest
#                     forward cases, 4 x 256 robots, 2 s: how often a start folds)
#   WARM_KERNELS [0]  1: first, alone, a 1-iteration training of the task at NUM_ENVS envs
#                     (OUT/warmup, OUT/warmup.log) compiles Warp's kernels into its cache, so
#                     the trainings' start-up loads them instead of compiling them (each train
#                     record's summary counts the modules it compiled: warp_modules_compiled)
#   MPS [1]           0: leave CUDA MPS off. MPS does not slow a lone training (on one H100,
#                     0.92 s per iteration under it, 0.96 s without); without it a gait test
#                     takes the GPU in turns with the training, 4-9 s per test on an H100
#                     against about 1 s under MPS
#   RESUME_FROM []    a folder holding one entry per seed whose name ends in _s<seed>: a
#                     training run folder (its last checkpoint) or a folder with that seed's
#                     checkpoints (the last one); each seed's training continues from it as
#                     <recipe>_resume_s<seed> for ITERATIONS more (the runs/ folder of an
#                     earlier call, or full checkpoints carried from another machine)
#   MICRODUCK [python3 -m mjlab_microduck.cli]   the microduck command
# Everything is started detached (setsid): the script returns at once (after the warm-up, when
# there is one) and prints where the logs are. OUT_DIR/runs holds the training runs,
# OUT_DIR/gait the gait tests, OUT_DIR/*.log each process's output (OUT_DIR/start the start
# tests). Bad input: one line, exit 2, nothing started or created.
# `microduck records collect OUT_DIR DEST --prefix h200_<recipe>` copies the publishable part
# (slim checkpoints, finished gait tests) while it runs.
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,/^set -/{/^set -/!p;}' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; fi
TASK=$1; ITERS=$2; OUT=$3; shift 3
SEEDS=("$@"); [ ${#SEEDS[@]} -gt 0 ] || SEEDS=(42 43 44)
NUM_ENVS=${NUM_ENVS:-4096}; SAVE_INTERVAL=${SAVE_INTERVAL:-50}; DEVICE=${DEVICE:-cuda:0}
WATCH_EVERY=${WATCH_EVERY:-50}; WATCH_FROM=${WATCH_FROM:-250}; START_WATCH=${START_WATCH:-0}
WARM_KERNELS=${WARM_KERNELS:-0}; STOP_ON_PASS=${STOP_ON_PASS:-0}; WATCH_AFTER=${WATCH_AFTER:-0}
RESUME_FROM=${RESUME_FROM:-}; MPS=${MPS:-1}
read -r -a MICRODUCK <<< "${MICRODUCK:-python3 -m mjlab_microduck.cli}"
refuse() { echo "train_side_by_side.sh: $*" >&2; exit 2; }
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || refuse "ITERATIONS must be a positive integer (got $ITERS)"
for s in "${SEEDS[@]}"; do [[ $s =~ ^[0-9]+$ ]] || refuse "seeds must be integers (got $s)"; done
[[ $START_WATCH =~ ^[01]$ ]] || refuse "START_WATCH must be 0 or 1 (got $START_WATCH)"
[ "$START_WATCH" = 1 ] && [ "$WATCH_EVERY" = 0 ] && refuse "START_WATCH=1 needs WATCH_EVERY > 0"
[[ $WARM_KERNELS =~ ^[01]$ ]] || refuse "WARM_KERNELS must be 0 or 1 (got $WARM_KERNELS)"
[[ $STOP_ON_PASS =~ ^[01]$ ]] || refuse "STOP_ON_PASS must be 0 or 1 (got $STOP_ON_PASS)"
[ "$STOP_ON_PASS" = 1 ] && [ "$WATCH_EVERY" = 0 ] && refuse "STOP_ON_PASS=1 needs WATCH_EVERY > 0"
[[ $MPS =~ ^[01]$ ]] || refuse "MPS must be 0 or 1 (got $MPS)"
[[ $WATCH_AFTER =~ ^[01]$ ]] || refuse "WATCH_AFTER must be 0 or 1 (got $WATCH_AFTER)"
[ "$WATCH_AFTER" = 1 ] && [ "$WATCH_EVERY" = 0 ] && refuse "WATCH_AFTER=1 needs WATCH_EVERY > 0"
[ "$WATCH_AFTER" = 1 ] && [ "$STOP_ON_PASS" = 1 ] \
  && refuse "STOP_ON_PASS=1 stops a running training; with WATCH_AFTER=1 none runs while testing"
[ -e "$OUT" ] && refuse "$OUT exists: an earlier run is never overwritten"
# resume_of SEED: what `train --resume-from` gets for SEED (checked before anything is made)
resume_of() {
  local hits=("$RESUME_FROM"/*_s"$1") last
  [ ${#hits[@]} = 1 ] && [ -d "${hits[0]}" ] \
    || refuse "RESUME_FROM $RESUME_FROM: no single folder ending in _s$1 for seed $1"
  last=$(find "${hits[0]}" -maxdepth 1 -name 'model_*.pt' | sort -V | tail -1)
  echo "${last:-${hits[0]}}"
}
resumes=()
if [ -n "$RESUME_FROM" ]; then
  [ -d "$RESUME_FROM" ] || refuse "RESUME_FROM $RESUME_FROM: no such folder"
  for seed in "${SEEDS[@]}"; do resumes+=("$(resume_of "$seed")") || exit 2; done
fi

mkdir -p "$OUT/runs" "$OUT/gait"
OUT=$(readlink -f "$OUT")
# The MPS daemon must not inherit this script's output: a caller reading it through a pipe
# would otherwise wait for the daemon to exit.
if [ "$MPS" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null \
   && nvidia-cuda-mps-control -d >/dev/null 2>&1 </dev/null; then
  echo "CUDA MPS started"
fi
if [ "$WARM_KERNELS" = 1 ]; then
  # Warp keeps a compiled module per machine, Warp version and module hash; the warm-up builds
  # the trainings' own task at their env count, so it compiles the modules they load.
  echo "warming Warp's kernel cache: 1 iteration of $TASK, $NUM_ENVS envs (log: $OUT/warmup.log)"
  "${MICRODUCK[@]}" train --name warmup --task "$TASK" --num-envs "$NUM_ENVS" --iterations 1 \
    --save-interval 1 --seed "${SEEDS[0]}" --device "$DEVICE" --logs-root "$OUT/warmup" \
    --profile full > "$OUT/warmup.log" 2>&1 < /dev/null \
    || { echo "train_side_by_side.sh: the warm-up training failed, see $OUT/warmup.log" >&2; exit 1; }
fi
names=()
# Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning -> walker_heading
stem=$(echo "$TASK" | sed 's/.*MicroDuck-\{0,1\}//; s/Tuning$//; s/\([a-z0-9]\)\([A-Z]\)/\1_\2/g')
stem=$(echo "${stem:-microduck}" | tr '[:upper:]' '[:lower:]')
for i in "${!SEEDS[@]}"; do
  seed=${SEEDS[$i]}
  resume=()
  if [ -n "$RESUME_FROM" ]; then
    name="${stem}_resume_s$seed"; resume=(--resume-from "${resumes[$i]}")
  else
    name="${stem}_s$seed"
  fi
  names+=("$name")
  mkdir -p "$OUT/work_$seed"
  (cd "$OUT/work_$seed" && setsid nohup "${MICRODUCK[@]}" train --name "$name" --task "$TASK" \
     --num-envs "$NUM_ENVS" --iterations "$ITERS" --save-interval "$SAVE_INTERVAL" \
     --seed "$seed" --device "$DEVICE" --logs-root "$OUT/runs" --profile full "${resume[@]}" \
     > "$OUT/train_$seed.log" 2>&1 < /dev/null &)
done
echo "started ${#SEEDS[@]} trainings of $TASK, $ITERS iterations, $NUM_ENVS envs each"
if [ "$WATCH_EVERY" != 0 ]; then
  # The watcher needs the run folders, which each training makes once its input is checked.
  for _ in $(seq 120); do
    [ "$(find "$OUT/runs" -mindepth 1 -maxdepth 1 -type d | wc -l)" -ge ${#SEEDS[@]} ] && break
    sleep 1
  done
  # watch FOLDER LOG [FLAG...]: one detached gait watcher over every run, into OUT/FOLDER.
  watch() {
    local folder=$1 log=$2; shift 2
    mkdir -p "$OUT/$folder"
    (cd "$OUT" && setsid nohup "${MICRODUCK[@]}" gait-watch --runs "$OUT"/runs/*/ \
       --profile full --device "$DEVICE" --every "$WATCH_EVERY" --min-iteration "$WATCH_FROM" \
       "$@" --out "$OUT/$folder" > "$OUT/$log" 2>&1 < /dev/null &)
  }
  if [ "$STOP_ON_PASS" = 1 ]; then
    watch gait watch.log --stop-on-pass
    echo "gait watcher started: every ${WATCH_EVERY}th checkpoint from $WATCH_FROM; a training stops at its first pass"
  elif [ "$WATCH_AFTER" = 1 ]; then
    watch gait watch.log --after-training
    echo "gait watcher started: every ${WATCH_EVERY}th checkpoint from $WATCH_FROM, once the trainings have ended"
  else
    watch gait watch.log
    echo "gait watcher started: every ${WATCH_EVERY}th checkpoint from $WATCH_FROM"
  fi
  if [ "$START_WATCH" = 1 ]; then
    watch start start_watch.log --start-test
    echo "start watcher started: the same checkpoints, start test"
  fi
fi
echo "logs: $OUT/train_<seed>.log, $OUT/watch.log; runs: $OUT/runs; gait tests: $OUT/gait"
