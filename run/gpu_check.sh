#!/usr/bin/env bash
# run/gpu_check.sh: the GPU measurements of docs/performance.md in one
# script, for a GPU whose minutes are few. Every step has a time limit;
# OUT gets each step's JSON (written as it goes), its printed tables (.md),
# its log (.log, unbuffered) and status.tsv (step, exit code, seconds).
# The script goes on after a failed step and exits non-zero when any step
# failed or was killed (its time limit, or the script stopped).
#
#   paths:      GEAET GatedGCN+Transformer+GEANet on ZINC-size batches, four
#               ways, the same weights and batches: eager (unpadded), static
#               (padded, not compiled: what main.py runs on CUDA by default),
#               compiled (+ the compiled update), graphs (compiled, replayed
#               as CUDA graphs: train.compile_mode reduce-overhead). Warm-up
#               (compilation, capture) apart from the steady-state graphs/s.
#   gpu-check:  each family, fast path against eager (losses agree?)
#   steps:      operators and host syncs per step (the driver's count too)
#   profile:    top kernels, launches per step, device-busy fraction
#   epochs:     main.py, GEAET ZINC, 3 epochs: the CUDA default, CUDA graphs,
#               and unpadded eager; compile seconds and seconds per epoch
#   per-gpu:    4 runs of the CUDA-graph mode on the one GPU against 1
#
# Usage: run/gpu_check.sh OUT [DATA]
#   DATA: a dataset.dir holding ZINC/ (the offline layout, docs/datasets.md);
#         epochs and per-gpu need it.
#   QUICK=1 run/gpu_check.sh OUT: the paths step only (one capacity, a
#         4-layer model: LAYERS=8 for the config's depth), under a 450 s limit
#         (QUICK_LIMIT), sized for 8 minutes of a GPU.
#   REHEARSE=1 run/gpu_check.sh OUT DATA: the same steps on the CPU at tiny
#         sizes (compiled with aot_eager), in a few minutes: run it before
#         spending GPU time (with QUICK=1 too for the quick mode).
#   LIMIT, QUICK_LIMIT: seconds per step (default 600, and 450 for paths).
set -u
OUT=${1:?usage: run/gpu_check.sh OUT [DATA]}
DATA=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python}
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$HERE"

ROW=geaet-gatedgcn
if [ -n "${REHEARSE:-}" ]; then
    export GRAPHGPS_EXT_COMPILE_BACKEND=aot_eager
    DEVICE=cpu; GPUS=(--cpu); STEPS=4; PROFILE=(--profile-steps 3 --profile-warmup 1)
    TINY=(--opts gt.layers 1 train.batch_size 4); QUICK_OPTS=(--opts gt.layers 1 train.batch_size 4)
    EPOCHS=(optim.max_epoch 2 train.batch_size 16 gt.layers 1 dataset.max_graphs 240
            accelerator cpu); FOUR=(--jobs 2); SEEDS=0-1
    LIMIT=${LIMIT:-240}; QUICK_LIMIT=${QUICK_LIMIT:-240}
    STEPS_ROWS=(--rows gps-gine csa)
else
    DEVICE=cuda; GPUS=(--gpus 0); STEPS=200; PROFILE=(); TINY=(); STEPS_ROWS=()
    QUICK_OPTS=(--opts gt.layers "${LAYERS:-4}" train.fast_path_check False)
    EPOCHS=(optim.max_epoch 3 accelerator cuda); FOUR=(--runs-per-gpu 4); SEEDS=0-3
    LIMIT=${LIMIT:-600}; QUICK_LIMIT=${QUICK_LIMIT:-450}
fi
printf 'step\texit\tseconds\n' > "$OUT/status.tsv"
failed=0
child=

stop() {  # the script itself stopped: record it, stop the step, fail
    local sig=$1
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
    printf '%s\t%s\t%s\n' "${current:-script}" "stopped by $sig" \
        "$((SECONDS - ${started:-0}))" >> "$OUT/status.tsv"
    echo "stopped by $sig"
    exit 130
}
trap 'stop TERM' TERM
trap 'stop INT' INT

step() {  # step NAME LIMIT COMMAND...: run with the time limit, log, record
    current=$1; local limit=$2; shift 2
    started=$SECONDS
    echo "== $current: $*" | tee "$OUT/$current.log"
    timeout -k 30 "$limit" "$@" > "$OUT/$current.md" \
        2>> "$OUT/$current.log" &
    child=$!
    wait "$child"
    local rc=$?
    child=
    printf '%s\t%s\t%s\n' "$current" "$rc" "$((SECONDS - started))" >> "$OUT/status.tsv"
    echo "   exit $rc in $((SECONDS - started)) s$([ "$rc" = 124 ] && echo ' (time limit)')"
    [ "$rc" = 0 ] || failed=1
}

bench=("$PY" -m graphgps_ext.bench --device "$DEVICE" --threads 0)
# The fast path on ZINC-size batches, four ways (the quick check).
step paths "$QUICK_LIMIT" "${bench[@]}" --suite gpu-check --rows "$ROW" \
    --paths eager static compiled graphs --check-steps "$STEPS" --one-capacity \
    "${QUICK_OPTS[@]}" --out "$OUT/paths.json"

if [ -z "${QUICK:-}" ]; then
    step gpu-check "$LIMIT" "${bench[@]}" --suite gpu-check --check-steps "$STEPS" \
        --one-capacity "${TINY[@]}" --out "$OUT/gpu-check.json"
    step steps "$LIMIT" "${bench[@]}" --suite steps "${STEPS_ROWS[@]}" "${TINY[@]}" \
        --out "$OUT/steps.json"
    step profile "$LIMIT" "${bench[@]}" --suite profile --rows "$ROW" gps-gine csa \
        --one-capacity "${PROFILE[@]}" "${TINY[@]}" --out "$OUT/profile.json"
fi

if [ -z "${QUICK:-}" ] && [ -n "$DATA" ]; then
    # GEAET ZINC epochs (train + val + test): main.py's default on this
    # device, the CUDA-graph mode, and unpadded eager.
    GRAPHS=(train.compile True train.compile_mode reduce-overhead)
    common=(--cfg configs/geaet/zinc.yaml dataset.dir "$DATA" "${EPOCHS[@]}"
            out_dir "$OUT/results")
    step epochs-default "$LIMIT" "$PY" main.py "${common[@]}" run_name default
    step epochs-graphs "$LIMIT" "$PY" main.py "${common[@]}" run_name graphs \
        train.static_shapes True "${GRAPHS[@]}"
    step epochs-eager "$LIMIT" "$PY" main.py "${common[@]}" run_name eager \
        train.static_shapes False train.compile False
    # Several runs per GPU in the CUDA-graph mode: 1, then 4 at once (the
    # launcher shares the compile cache: the first run fills it).
    sweep=("$PY" -m graphgps_ext.sweep configs/geaet/zinc.yaml "${GPUS[@]}")
    step per-gpu-1 "$LIMIT" "${sweep[@]}" --seeds 0 -- dataset.dir "$DATA" \
        "${EPOCHS[@]}" train.static_shapes True "${GRAPHS[@]}" out_dir "$OUT/results" \
        run_name k1
    step per-gpu-4 "$LIMIT" "${sweep[@]}" --seeds "$SEEDS" "${FOUR[@]}" -- \
        dataset.dir "$DATA" "${EPOCHS[@]}" train.static_shapes True "${GRAPHS[@]}" \
        out_dir "$OUT/results" run_name k4
    "$PY" - "$OUT/results" > "$OUT/epochs.md" <<'EOF'
import json, os, re, sys
root = sys.argv[1]
print('| run | seed | compile s (torch.compile) | seconds per epoch (train + val + test) |')
print('|---|---|---|---|')
for run in ('default', 'graphs', 'eager', 'k1', 'k4'):
    folder = os.path.join(root, run)
    for seed in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not seed.isdigit():
            continue
        epochs = {}
        for split in ('train', 'val', 'test'):
            path = os.path.join(folder, seed, split, 'stats.json')
            if os.path.exists(path):
                for line in open(path):
                    r = json.loads(line)
                    epochs[r['epoch']] = epochs.get(r['epoch'], 0.0) + r['time_epoch']
        log = os.path.join(folder, seed, 'logging.log')
        m = re.findall(r'in ([0-9.]+) s of compiling calls',
                       open(log).read() if os.path.exists(log) else '')
        print(f'| {run} | {seed} | {m[-1] if m else "-"} | '
              + ', '.join(f'{epochs[e]:.2f}' for e in sorted(epochs)) + ' |')
EOF
    cat "$OUT/epochs.md"
fi
cat "$OUT/status.tsv"
[ "$failed" = 0 ] || echo "FAILED: a step did not exit 0 (status.tsv)"
exit "$failed"
