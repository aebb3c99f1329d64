#!/usr/bin/env bash
# run/gpu_check.sh: the GPU measurements of docs/performance.md in one
# script, for a GPU whose minutes are few. Every step has a time limit and
# the script goes on after a failed step; OUT gets each step's JSON, its
# printed tables (.md), its log (.log) and status.tsv (step, exit code,
# seconds).
#
#   1. gpu-check:  each family, fast path against eager (losses agree?)
#   2. steps:      operators and host syncs per step (the driver's count too)
#   3. profile:    top kernels, launches per step, device-busy fraction
#   4. epochs:     main.py, GEAET ZINC, 3 epochs, eager and fast (needs DATA)
#   5. per-gpu:    4 runs on the one GPU against 1 (needs DATA)
#
# Usage: run/gpu_check.sh OUT [DATA]
#   DATA: a dataset.dir holding ZINC/ (the offline layout, docs/datasets.md).
#   REHEARSE=1 run/gpu_check.sh OUT [DATA]: the same on the CPU at tiny
#   sizes, in a few minutes: run it before spending GPU time.
set -u
OUT=${1:?usage: run/gpu_check.sh OUT [DATA]}
DATA=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python}
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$HERE"

if [ -n "${REHEARSE:-}" ]; then
    DEVICE=cpu; GPUS=(--cpu); STEPS=4; PROFILE=(--profile-steps 3 --profile-warmup 2)
    TINY=(--opts gt.layers 1 train.batch_size 4); EPOCHS=(optim.max_epoch 1 train.batch_size 8)
    FAST=(train.static_shapes True); FOUR=(--jobs 4); LIMIT=300
else
    DEVICE=cuda; GPUS=(--gpus 0); STEPS=300; PROFILE=(); TINY=(); EPOCHS=(optim.max_epoch 3)
    FAST=(train.static_shapes True train.compile True); FOUR=(--runs-per-gpu 4)
    LIMIT=600
fi
printf 'step\texit\tseconds\n' > "$OUT/status.tsv"

step() {  # step NAME COMMAND...: run with the time limit, log, record
    local name=$1; shift
    local start=$SECONDS
    echo "== $name: $*" | tee "$OUT/$name.log"
    timeout "$LIMIT" "$@" > "$OUT/$name.md" 2>> "$OUT/$name.log"
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$OUT/status.tsv"
    echo "   exit $rc in $((SECONDS - start)) s"
}

bench=("$PY" -m graphgps_ext.bench --device "$DEVICE" --threads 0)
step gpu-check "${bench[@]}" --suite gpu-check --check-steps "$STEPS" "${TINY[@]}" \
    --out "$OUT/gpu-check.json"
step steps "${bench[@]}" --suite steps "${TINY[@]}" --out "$OUT/steps.json"
step profile "${bench[@]}" --suite profile --rows geaet-gatedgcn gps-gine csa \
    "${PROFILE[@]}" "${TINY[@]}" --out "$OUT/profile.json"

if [ -n "$DATA" ]; then
    # GEAET ZINC epochs (train + val + test), eager and on the fast path.
    common=(--cfg configs/geaet/zinc.yaml dataset.dir "$DATA" "${EPOCHS[@]}"
            accelerator "$DEVICE" out_dir "$OUT/results")
    step epochs-eager "$PY" main.py "${common[@]}" run_name eager \
        train.static_shapes False train.compile False
    step epochs-fast "$PY" main.py "${common[@]}" run_name fast "${FAST[@]}"
    # Several runs per GPU: 4 seeds at once against 1 (time_epoch of each).
    sweep=("$PY" -m graphgps_ext.sweep configs/geaet/zinc.yaml "${GPUS[@]}")
    step per-gpu-1 "${sweep[@]}" --seeds 0 -- dataset.dir "$DATA" "${EPOCHS[@]}" \
        out_dir "$OUT/results" run_name k1
    step per-gpu-4 "${sweep[@]}" --seeds 0-3 "${FOUR[@]}" -- dataset.dir "$DATA" \
        "${EPOCHS[@]}" out_dir "$OUT/results" run_name k4
    "$PY" - "$OUT/results" > "$OUT/epochs.md" <<'EOF'
import json, os, sys
root = sys.argv[1]
print('| run | seeds | seconds per epoch (train + val + test), last epoch |')
print('|---|---|---|')
for run in ('eager', 'fast', 'k1', 'k4'):
    seconds = []
    for seed in sorted(os.listdir(os.path.join(root, run)) if os.path.isdir(os.path.join(root, run)) else []):
        if not seed.isdigit():
            continue
        total = 0.0
        for split in ('train', 'val', 'test'):
            path = os.path.join(root, run, seed, split, 'stats.json')
            if os.path.exists(path):
                with open(path) as f:
                    total += json.loads(f.read().splitlines()[-1]).get('time_epoch', 0.0)
        seconds.append(total)
    print(f'| {run} | {len(seconds)} | ' + ', '.join(f'{s:.2f}' for s in seconds) + ' |')
EOF
    cat "$OUT/epochs.md"
fi
cat "$OUT/status.tsv"
