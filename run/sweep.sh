#!/usr/bin/env bash
# sweep.sh: run configs x seeds locally (CPU or a GPU queue) or as a SLURM array job.
#
# Usage: run/sweep.sh [options] CONFIG|GLOB... [-- KEY VALUE ...]
# Run `run/sweep.sh --help` for the options. Needs bash >= 4.3 and coreutils only
# (plus sbatch for --slurm).
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: run/sweep.sh [options] CONFIG|GLOB... [-- KEY VALUE ...]

Runs `python main.py --cfg CONFIG seed S [KEY VALUE ...]` for every config and
seed. A config's results name is its path below configs/ with '/' -> '-' and no
.yaml (configs/geaet/zinc.yaml -> geaet-zinc); its runs go to
RESULTS/<name>/<seed>/. A run is complete when RESULTS/<name>/<seed>/done exists;
complete runs are skipped. After all runs, `python -m graphgps_ext.agg
RESULTS/<name>` aggregates every config once (a dependent job with --slurm).

Selection
  CONFIG|GLOB          YAML files or quoted globs ('configs/geaet/*.yaml')
  --seeds SPEC         seeds: ranges and lists, e.g. 0-9, 0,3,5, 0-3,8 (default 0)
  --plan FILE          lines 'CONFIG SEEDS' (per-config seeds; '#' comments); an
                       explicit --seeds overrides the plan's seeds
  -- KEY VALUE ...     overrides passed through to main.py (e.g. -- optim.max_epoch 5)
  --force              rerun complete runs too (main.py starts them afresh)
  --resume             continue unfinished runs from their last checkpoint
                       (adds train.auto_resume True; default: they restart)

Local execution (default: sequential, environment's devices)
  --gpus LIST          GPU queue, e.g. 0,1,2,3: one run per GPU at a time
                       (CUDA_VISIBLE_DEVICES), next run starts when a GPU frees up
  --cpu                sequential on CPU (CUDA_VISIBLE_DEVICES='')
  Each run logs to RESULTS/<name>/logs/seed<S>.log.

SLURM (--slurm): writes an sbatch array script (one task per config x seed
still to run) to RESULTS/_slurm/, submits it with sbatch, then submits the
aggregation as a dependent job (--dependency=afterany:<jobid>; 2 h, 8G, 2 CPUs,
same partition/account).
  --throttle N         at most N array tasks at once (--array=...%N)
  --time T             per-task time limit (default 24:00:00)
  --mem M              memory per task (default 32G)
  --partition P        --account A        --nodes N (default 1)
  --gpus-per-task N    GPUs per task (default 1; 0 = none)
  --cpus-per-task N    CPUs per task (default 4)
  With --gpus-per-task G > 1 or --nodes N > 1 every (config, seed) is one
  data-parallel run on N nodes x G GPUs: `srun` starts one torchrun per node
  (--ntasks-per-node=1, G GPUs and --cpus-per-task CPUs each), torchrun starts
  G processes (DDP, train.batch_size per process; see README "Multi-GPU and
  clusters").
  --requeue            requeue on preemption and before the time limit; the run
                       resumes from its last checkpoint (train.auto_resume True
                       is added to the overrides)
  --sbatch-opt OPT     extra '#SBATCH OPT' line (repeatable), e.g. --sbatch-opt --qos=high
  --job-name NAME      (default ggx-<first config name>)

Other
  --results DIR        results root (default results)
  --python CMD         Python interpreter (default: $PYTHON or python)
  --main FILE          entry point (default main.py)
  --no-agg             skip the aggregation
  --dry-run            print the commands (or the sbatch scripts) without running
  -h, --help           this help
EOF
}

die() { echo "sweep.sh: error: $*" >&2; exit 2; }

# ---------------------------------------------------------------- arguments
SEEDS_SPEC=0
SEEDS_GIVEN=0
PLAN=''
GPUS=''
CPU=0
SLURM=0
DRY=0
FORCE=0
RESUME=0
AGG=1
RESULTS=results
PYTHON_CMD=${PYTHON:-python}
MAIN=main.py
THROTTLE=''
TIME=24:00:00
MEM=32G
PARTITION=''
ACCOUNT=''
NODES=1
GPUS_PER_TASK=1
CPUS_PER_TASK=4
REQUEUE=0
JOB_NAME=''
SBATCH_OPTS=()
CONFIG_ARGS=()
OVERRIDES=()

need() { [[ $# -ge 2 && -n $2 ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --seeds) need "$@"; SEEDS_SPEC=$2; SEEDS_GIVEN=1; shift 2 ;;
        --plan) need "$@"; PLAN=$2; shift 2 ;;
        --gpus) need "$@"; GPUS=$2; shift 2 ;;
        --cpu) CPU=1; shift ;;
        --slurm) SLURM=1; shift ;;
        --dry-run) DRY=1; shift ;;
        --force) FORCE=1; shift ;;
        --resume) RESUME=1; shift ;;
        --no-agg) AGG=0; shift ;;
        --results) need "$@"; RESULTS=${2%/}; shift 2 ;;
        --python) need "$@"; PYTHON_CMD=$2; shift 2 ;;
        --main) need "$@"; MAIN=$2; shift 2 ;;
        --throttle) need "$@"; THROTTLE=$2; shift 2 ;;
        --time) need "$@"; TIME=$2; shift 2 ;;
        --mem) need "$@"; MEM=$2; shift 2 ;;
        --partition) need "$@"; PARTITION=$2; shift 2 ;;
        --account) need "$@"; ACCOUNT=$2; shift 2 ;;
        --nodes) need "$@"; NODES=$2; shift 2 ;;
        --gpus-per-task) need "$@"; GPUS_PER_TASK=$2; shift 2 ;;
        --cpus-per-task) need "$@"; CPUS_PER_TASK=$2; shift 2 ;;
        --requeue) REQUEUE=1; shift ;;
        --sbatch-opt) need "$@"; SBATCH_OPTS+=("$2"); shift 2 ;;
        --job-name) need "$@"; JOB_NAME=$2; shift 2 ;;
        --) shift; OVERRIDES=("$@"); break ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) CONFIG_ARGS+=("$1"); shift ;;
    esac
done

[[ ${#CONFIG_ARGS[@]} -gt 0 || -n $PLAN ]] || die "no config given (see --help)"
[[ $(( ${#OVERRIDES[@]} % 2 )) -eq 0 ]] || die "overrides after -- must be KEY VALUE pairs, got: ${OVERRIDES[*]}"
[[ $SLURM -eq 1 && -n $GPUS ]] && die "--slurm and --gpus are exclusive (SLURM assigns GPUs)"
[[ $CPU -eq 1 && -n $GPUS ]] && die "--cpu and --gpus are exclusive"
for v in THROTTLE NODES GPUS_PER_TASK CPUS_PER_TASK; do
    [[ -z ${!v} || ${!v} =~ ^[0-9]+$ ]] || die "--$(tr 'A-Z_' 'a-z-' <<<"$v") must be an integer, got '${!v}'"
done
if [[ -n $GPUS ]]; then
    [[ $GPUS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--gpus must be a comma-separated list of GPU ids, got '$GPUS'"
fi

# ---------------------------------------------------------------- helpers
# Expand a seed spec "0-3,7,9-10" into a list of integers, one per line.
parse_seeds() {
    local spec=$1 part a b i
    [[ $spec =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] \
        || die "bad --seeds '$spec': use ranges and lists such as 0-9 or 0,2,5 or 0-3,8"
    IFS=',' read -ra parts <<<"$spec"
    for part in "${parts[@]}"; do
        if [[ $part == *-* ]]; then
            a=${part%-*}; b=${part#*-}
            (( 10#$a <= 10#$b )) || die "bad seed range '$part' (start > end)"
            for ((i = 10#$a; i <= 10#$b; i++)); do echo "$i"; done
        else
            echo "$((10#$part))"
        fi
    done | awk '!seen[$0]++'
}

# Results name of a config: its path below configs/, '/' -> '-', no extension.
cfg_name() {
    local p=${1#./}
    if [[ $p == configs/* || $p == */configs/* ]]; then
        p=${p##*configs/}
    else
        p=${p##*/}
    fi
    p=${p%.yaml}; p=${p%.yml}
    echo "${p//\//-}"
}

# Shell-quote a command for printing / embedding in a script.
quote() { local out='' w; for w in "$@"; do out+="$(printf '%q' "$w") "; done; echo "${out% }"; }

# ---------------------------------------------------------------- configs and seeds
# PAIRS: "config<TAB>seedspec" for every config to run.
PAIRS=()
expand_config() {  # arg seedspec -> PAIRS entries
    local arg=$1 spec=$2 m
    if [[ -f $arg ]]; then
        PAIRS+=("$arg"$'\t'"$spec")
        return
    fi
    local -a matches
    shopt -s nullglob
    # shellcheck disable=SC2206
    matches=($arg)
    shopt -u nullglob
    [[ ${#matches[@]} -gt 0 ]] || die "no config matches '$arg'"
    for m in "${matches[@]}"; do
        [[ -f $m ]] && PAIRS+=("$m"$'\t'"$spec")
    done
    return 0
}
for arg in "${CONFIG_ARGS[@]}"; do expand_config "$arg" "$SEEDS_SPEC"; done
if [[ -n $PLAN ]]; then
    [[ -f $PLAN ]] || die "plan file '$PLAN' not found"
    while read -r pcfg pseeds rest || [[ -n ${pcfg:-} ]]; do
        [[ -z ${pcfg:-} || $pcfg == \#* ]] && continue
        [[ -n ${pseeds:-} && -z ${rest:-} ]] || die "bad plan line in $PLAN: '$pcfg $pseeds $rest' (want: CONFIG SEEDS)"
        # An explicit --seeds overrides the plan's seeds.
        [[ $SEEDS_GIVEN -eq 1 ]] && pseeds=$SEEDS_SPEC
        expand_config "$pcfg" "$pseeds"
    done <"$PLAN"
fi
[[ ${#PAIRS[@]} -gt 0 ]] || die "no config given (see --help)"

# Task list: config, name, seed of every run still to do.
T_CFG=(); T_NAME=(); T_SEED=()
NAMES=()
declare -A SEEN=()
n_skip=0
for pair in "${PAIRS[@]}"; do
    c=${pair%%$'\t'*}
    spec=${pair#*$'\t'}
    [[ $c == *.yaml || $c == *.yml ]] || die "'$c' is not a YAML config"
    name=$(cfg_name "$c")
    NAMES+=("$name")
    seed_list=$(parse_seeds "$spec") || exit 2
    mapfile -t seeds <<<"$seed_list"
    for s in "${seeds[@]}"; do
        [[ -n ${SEEN["$name/$s"]:-} ]] && continue
        SEEN["$name/$s"]=1
        if [[ $FORCE -eq 0 && -e $RESULTS/$name/$s/done ]]; then
            n_skip=$((n_skip + 1))
            [[ $DRY -eq 1 ]] && echo "# skip $name seed $s (complete: $RESULTS/$name/$s/done)"
            continue
        fi
        T_CFG+=("$c"); T_NAME+=("$name"); T_SEED+=("$s")
    done
done
mapfile -t NAMES < <(printf '%s\n' "${NAMES[@]}" | awk '!seen[$0]++')
n_tasks=${#T_CFG[@]}

read -ra PY_WORDS <<<"$PYTHON_CMD"
[[ ${#PY_WORDS[@]} -gt 0 ]] || die "--python must not be empty"
# out_dir keeps main.py's results root equal to the one checked for 'done'.
RUN_OVERRIDES=(out_dir "$RESULTS" "${OVERRIDES[@]}")
if [[ $REQUEUE -eq 1 || $RESUME -eq 1 ]]; then
    RUN_OVERRIDES+=(train.auto_resume True)
fi

run_cmd() {  # config seed -> printable command
    quote "${PY_WORDS[@]}" "$MAIN" --cfg "$1" seed "$2" "${RUN_OVERRIDES[@]}"
}
agg_cmds() {  # one aggregation command per config name
    local n
    for n in "${NAMES[@]}"; do quote "${PY_WORDS[@]}" -m graphgps_ext.agg "$RESULTS/$n"; done
}

# ---------------------------------------------------------------- SLURM
if [[ $SLURM -eq 1 ]]; then
    if [[ $n_tasks -eq 0 ]]; then
        echo "# nothing to run: all ${n_skip} runs are complete"
        [[ $AGG -eq 1 && $DRY -eq 1 ]] && agg_cmds
        exit 0
    fi
    ROOT=$(pwd -P)
    [[ -n $JOB_NAME ]] || JOB_NAME="ggx-${NAMES[0]}"
    stamp=$(date +%Y%m%d-%H%M%S)
    SDIR=$RESULTS/_slurm
    SCRIPT=$SDIR/$JOB_NAME-$stamp.sbatch
    AGG_SCRIPT=$SDIR/$JOB_NAME-$stamp-agg.sbatch
    array="0-$((n_tasks - 1))"
    [[ -n $THROTTLE ]] && array+="%$THROTTLE"

    header() {  # job-name output-pattern time mem cpus nodes [ntasks]
        echo '#!/usr/bin/env bash'
        echo "#SBATCH --job-name=$1"
        echo "#SBATCH --chdir=$ROOT"
        echo "#SBATCH --output=$ROOT/$SDIR/$2"
        echo "#SBATCH --time=$3"
        echo "#SBATCH --mem=$4"
        echo "#SBATCH --nodes=$6"
        echo "#SBATCH --ntasks=${7:-1}"
        echo "#SBATCH --cpus-per-task=$5"
        [[ -n $PARTITION ]] && echo "#SBATCH --partition=$PARTITION"
        [[ -n $ACCOUNT ]] && echo "#SBATCH --account=$ACCOUNT"
        local o
        for o in "${SBATCH_OPTS[@]}"; do echo "#SBATCH $o"; done
        return 0
    }

    array_script() {
        # Data parallel: one task (torchrun) per node, G processes each.
        local ddp=0 launch
        [[ $GPUS_PER_TASK -gt 1 || $NODES -gt 1 ]] && ddp=1
        header "$JOB_NAME" '%x-%A_%a.out' "$TIME" "$MEM" "$CPUS_PER_TASK" "$NODES" \
            "$([[ $ddp -eq 1 ]] && echo "$NODES" || echo 1)"
        [[ $ddp -eq 1 ]] && echo "#SBATCH --ntasks-per-node=1"
        echo "#SBATCH --array=$array"
        [[ $GPUS_PER_TASK -gt 0 ]] && echo "#SBATCH --gpus-per-task=$GPUS_PER_TASK"
        if [[ $REQUEUE -eq 1 ]]; then
            echo '#SBATCH --requeue'
            echo '#SBATCH --open-mode=append'
            echo '#SBATCH --signal=B:USR1@300'
        fi
        echo 'set -uo pipefail'
        echo "# One task per (config, seed); generated by run/sweep.sh on $(date -Iseconds)."
        printf 'CFGS=('; printf ' %q' "${T_CFG[@]}"; echo ' )'
        printf 'NAMES=('; printf ' %q' "${T_NAME[@]}"; echo ' )'
        printf 'SEEDS=('; printf ' %q' "${T_SEED[@]}"; echo ' )'
        printf 'OVERRIDES=('; [[ ${#RUN_OVERRIDES[@]} -gt 0 ]] && printf ' %q' "${RUN_OVERRIDES[@]}"; echo ' )'
        launch="$(quote "${PY_WORDS[@]}" "$MAIN")"
        if [[ $ddp -eq 1 ]]; then
            local nproc=$(( GPUS_PER_TASK > 1 ? GPUS_PER_TASK : 1 )) rdzv
            if [[ $NODES -gt 1 ]]; then
                echo '# Rendezvous of the torchrun agents on the first node.'
                echo 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'
                echo 'MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))'
                rdzv=" --nnodes=$NODES --rdzv_backend=c10d"' --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" --rdzv_id="$SLURM_JOB_ID"'
            else
                rdzv=' --standalone --nnodes=1'
            fi
            launch="srun --ntasks-per-node=1 --kill-on-bad-exit=1 $(quote "${PY_WORDS[@]}") -m torch.distributed.run$rdzv --nproc_per_node=$nproc $(quote "$MAIN")"
        fi
        echo 'i=${SLURM_ARRAY_TASK_ID:?not an array task}'
        echo 'cfg=${CFGS[$i]}; name=${NAMES[$i]}; seed=${SEEDS[$i]}'
        echo "out=$(printf '%q' "$RESULTS")/\$name/\$seed"
        echo "log=$(printf '%q' "$RESULTS")/\$name/logs/seed\$seed.log"
        echo 'if [[ -e $out/done ]]; then echo "complete: $out/done"; exit 0; fi'
        echo 'mkdir -p "$(dirname "$log")"'
        echo 'echo "[$(date -Iseconds)] job ${SLURM_JOB_ID:-?} task $i on $(hostname): $cfg seed $seed" >>"$log"'
        if [[ $REQUEUE -eq 1 ]]; then
            # Before the time limit (USR1) requeue this task; the run resumes
            # from its last checkpoint (train.auto_resume True).
            echo 'requeue() { echo "[$(date -Iseconds)] time limit near: requeue" >>"$log";'
            echo '  scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"; kill -TERM "$pid" 2>/dev/null; }'
            echo 'trap requeue USR1'
            echo "$launch"' --cfg "$cfg" seed "$seed" "${OVERRIDES[@]}" >>"$log" 2>&1 &'
            echo 'pid=$!'
            echo 'wait "$pid"; rc=$?'
            echo '# wait returns early (>128) when the trap fires: wait for the run to stop'
            echo 'while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done'
            echo 'exit $rc'
        else
            echo "exec $launch"' --cfg "$cfg" seed "$seed" "${OVERRIDES[@]}" >>"$log" 2>&1'
        fi
    }

    agg_script() {
        header "$JOB_NAME-agg" '%x-%j.out' 02:00:00 8G 2 1
        echo 'set -uo pipefail'
        echo '# Aggregation of every config once, after the array job (afterany).'
        echo 'rc=0'
        agg_cmds | sed 's/$/ || rc=1/'
        echo 'exit $rc'
    }

    if [[ $DRY -eq 1 ]]; then
        echo "# --- $SCRIPT ($n_tasks tasks, $n_skip complete runs skipped)"
        array_script
        if [[ $AGG -eq 1 ]]; then
            echo "# --- $AGG_SCRIPT"
            agg_script
        fi
        echo "# --- submission"
        echo "sbatch --parsable $SCRIPT"
        [[ $AGG -eq 1 ]] && echo "sbatch --parsable --dependency=afterany:<jobid> $AGG_SCRIPT"
        exit 0
    fi
    command -v sbatch >/dev/null || die "sbatch not found: run on a SLURM login node or use --dry-run"
    mkdir -p "$SDIR"
    array_script >"$SCRIPT"
    jobid=$(sbatch --parsable "$SCRIPT")
    jobid=${jobid%%;*}
    echo "submitted array job $jobid ($n_tasks tasks; $n_skip complete runs skipped): $SCRIPT"
    if [[ $AGG -eq 1 ]]; then
        agg_script >"$AGG_SCRIPT"
        aggid=$(sbatch --parsable --dependency="afterany:$jobid" "$AGG_SCRIPT")
        echo "submitted aggregation job ${aggid%%;*} (after $jobid): $AGG_SCRIPT"
    fi
    exit 0
fi

# ---------------------------------------------------------------- local
log_of() { echo "$RESULTS/$1/logs/seed$2.log"; }

if [[ $DRY -eq 1 ]]; then
    if [[ -n $GPUS ]]; then
        echo "# GPU queue on $GPUS: one run per GPU at a time (CUDA_VISIBLE_DEVICES=<gpu>)"
    elif [[ $CPU -eq 1 ]]; then
        echo "# sequential on CPU (CUDA_VISIBLE_DEVICES='')"
    else
        echo "# sequential"
    fi
    for ((k = 0; k < n_tasks; k++)); do
        echo "$(run_cmd "${T_CFG[k]}" "${T_SEED[k]}") > $(log_of "${T_NAME[k]}" "${T_SEED[k]}") 2>&1"
    done
    echo "# $n_tasks runs, $n_skip complete runs skipped"
    if [[ $AGG -eq 1 ]]; then
        echo "# after all runs:"
        agg_cmds
    fi
    exit 0
fi

FAILED=()
# Launch task k in the background on device $2 ('' = CPU, '-' = inherit).
launch() {
    local k=$1 dev=$2 name=${T_NAME[$1]} seed=${T_SEED[$1]} log where=''
    log=$(log_of "$name" "$seed")
    mkdir -p "$(dirname "$log")"
    local -a cmd=("${PY_WORDS[@]}" "$MAIN" --cfg "${T_CFG[k]}" seed "$seed" "${RUN_OVERRIDES[@]}")
    case $dev in
        -) where='' ;;
        '') where=' on CPU' ;;
        *) where=" on GPU $dev" ;;
    esac
    echo "[$(date +%H:%M:%S)] start $name seed $seed$where -> $log"
    (
        if [[ $dev != - ]]; then export CUDA_VISIBLE_DEVICES=$dev; fi
        echo "[$(date -Iseconds)]${CUDA_VISIBLE_DEVICES+ CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES} $(quote "${cmd[@]}")" >"$log"
        rc=0
        "${cmd[@]}" >>"$log" 2>&1 </dev/null || rc=$?
        echo "$rc" >"$log.rc"
        exit "$rc"
    ) &
    LAST_PID=$!
}
collect() {  # k -> records a failure
    local k=$1 rcfile rc
    rcfile="$(log_of "${T_NAME[k]}" "${T_SEED[k]}").rc"
    rc=$(cat "$rcfile" 2>/dev/null || echo '?')
    if [[ $rc != 0 ]]; then
        FAILED+=("${T_NAME[k]} seed ${T_SEED[k]} (exit $rc, log $(log_of "${T_NAME[k]}" "${T_SEED[k]}"))")
        echo "[$(date +%H:%M:%S)] FAILED ${T_NAME[k]} seed ${T_SEED[k]} (exit $rc)"
    else
        echo "[$(date +%H:%M:%S)] done ${T_NAME[k]} seed ${T_SEED[k]}"
    fi
    rm -f "$rcfile"
}

echo "# $n_tasks runs to do, $n_skip complete runs skipped"
if [[ -n $GPUS ]]; then
    IFS=',' read -ra GPU_LIST <<<"$GPUS"
    SLOT_PID=(); SLOT_TASK=()
    for ((g = 0; g < ${#GPU_LIST[@]}; g++)); do SLOT_PID[g]=''; SLOT_TASK[g]=''; done
    free_slots() {  # reap finished runs; sets FREE to the first free slot or -1
        local g
        FREE=-1
        for ((g = 0; g < ${#GPU_LIST[@]}; g++)); do
            if [[ -n ${SLOT_PID[g]} ]] && ! kill -0 "${SLOT_PID[g]}" 2>/dev/null; then
                wait "${SLOT_PID[g]}" 2>/dev/null || true
                collect "${SLOT_TASK[g]}"
                SLOT_PID[g]=''; SLOT_TASK[g]=''
            fi
            if [[ -z ${SLOT_PID[g]} && $FREE -lt 0 ]]; then FREE=$g; fi
        done
    }
    for ((k = 0; k < n_tasks; k++)); do
        free_slots
        while [[ $FREE -lt 0 ]]; do
            wait -n 2>/dev/null || true
            free_slots
        done
        launch "$k" "${GPU_LIST[FREE]}"
        SLOT_PID[FREE]=$LAST_PID; SLOT_TASK[FREE]=$k
    done
    # Drain the queue.
    while :; do
        busy=0
        for ((g = 0; g < ${#GPU_LIST[@]}; g++)); do [[ -n ${SLOT_PID[g]} ]] && busy=1; done
        [[ $busy -eq 0 ]] && break
        wait -n 2>/dev/null || true
        free_slots
    done
else
    dev=-
    [[ $CPU -eq 1 ]] && dev=''
    for ((k = 0; k < n_tasks; k++)); do
        launch "$k" "$dev"
        wait "$LAST_PID" 2>/dev/null || true
        collect "$k"
    done
fi

AGG_FAILED=0
if [[ $AGG -eq 1 ]]; then
    for n in "${NAMES[@]}"; do
        if compgen -G "$RESULTS/$n/*/done" >/dev/null; then
            echo "[$(date +%H:%M:%S)] aggregate $RESULTS/$n"
            "${PY_WORDS[@]}" -m graphgps_ext.agg "$RESULTS/$n" || AGG_FAILED=1
        else
            echo "# no complete run of $n: not aggregated"
        fi
    done
fi

if [[ ${#FAILED[@]} -gt 0 ]]; then
    echo "${#FAILED[@]} run(s) failed:" >&2
    printf '  %s\n' "${FAILED[@]}" >&2
    exit 1
fi
[[ $AGG_FAILED -eq 0 ]] || { echo "aggregation failed" >&2; exit 1; }
exit 0
