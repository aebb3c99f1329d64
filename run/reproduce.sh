#!/usr/bin/env bash
# reproduce.sh: run every config of a paper, or of one of its tables/figures,
# with the paper's number of seeds, through run/sweep.sh.
#
# Usage: run/reproduce.sh <paper> [<table>] [sweep.sh options] [-- KEY VALUE ...]
#        run/reproduce.sh --list [<paper>]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TABLES=${TABLES:-$HERE/tables.tsv}

usage() {
    cat <<'EOF'
Usage: run/reproduce.sh <paper> [<table>] [sweep.sh options] [-- KEY VALUE ...]
       run/reproduce.sh --list [<paper>]

  <paper>   geaet | csa | mna | gt | gps
  <table>   a table or figure of that paper, e.g. table1, table4, fig7
            (default: every table of the paper)

The mapping paper/table -> configs and seeds is data: run/tables.tsv (columns
paper, table, config, seeds, ref_table, dataset, model, metric, split). Every
option after the paper/table goes to run/sweep.sh (--gpus, --cpu, --slurm,
--dry-run, --seeds to override the paper's seeds, overrides after --, ...).

Examples
  run/reproduce.sh geaet --dry-run           # list every GEAET run
  run/reproduce.sh mna table2 --gpus 0,1     # MNA-GT Table 2, 10 seeds, 2 GPUs
  run/reproduce.sh csa table1 --slurm --partition gpu --throttle 8 --requeue
EOF
}

die() { echo "reproduce.sh: error: $*" >&2; exit 2; }
[[ -f $TABLES ]] || die "table file '$TABLES' not found"

# Rows of the table file without comments/header: paper table config seeds ...
rows() { awk -F'\t' 'NR > 1 && $0 !~ /^#/ && NF >= 4' "$TABLES"; }

if [[ $# -eq 0 || $1 == -h || $1 == --help ]]; then usage; exit 0; fi
if [[ $1 == --list ]]; then
    rows | awk -F'\t' -v p="${2:-}" 'p == "" || $1 == p { k = $1 "\t" $2; if (!(k in n)) order[++m] = k; n[k]++; c[k, $3] = 1 }
        END { for (i = 1; i <= m; i++) { k = order[i]; cnt = 0; for (x in c) { split(x, y, SUBSEP); if (y[1] == k) cnt++ }
              split(k, pt, "\t"); printf "%-6s %-8s %3d configs\n", pt[1], pt[2], cnt } }'
    exit 0
fi

PAPER=$1; shift
papers=$(rows | cut -f1 | awk '!s[$0]++' | tr '\n' ' ')
rows | cut -f1 | grep -qx -- "$PAPER" || die "unknown paper '$PAPER'; known: $papers"
tables=$(rows | awk -F'\t' -v p="$PAPER" '$1 == p { print $2 }' | awk '!s[$0]++' | tr '\n' ' ')

TABLE=''
if [[ $# -gt 0 && $1 != -* ]]; then
    TABLE=$1; shift
    grep -qw -- "$TABLE" <<<"$tables" || die "paper '$PAPER' has no table '$TABLE'; known: $tables"
fi

# Pass-through options; detect a user-given job name and dry-run.
DRY=0; HAS_NAME=0
for a in "$@"; do
    [[ $a == -- ]] && break
    [[ $a == --dry-run ]] && DRY=1
    [[ $a == --job-name ]] && HAS_NAME=1
done

PLAN=$(mktemp "${TMPDIR:-/tmp}/reproduce-plan.XXXXXX")
trap 'rm -f "$PLAN"' EXIT
rows | awk -F'\t' -v p="$PAPER" -v t="$TABLE" '$1 == p && (t == "" || $2 == t) { print $3 "\t" $4 }' \
    | awk '!s[$0]++' >"$PLAN"
[[ -s $PLAN ]] || die "no configs for $PAPER $TABLE in $TABLES"

missing=0
while IFS=$'\t' read -r cfg _; do
    if [[ ! -f $cfg ]]; then echo "reproduce.sh: missing config $cfg" >&2; missing=1; fi
done <"$PLAN"
[[ $missing -eq 0 ]] || die "configs listed in $TABLES are missing (run from the repository root)"

if [[ $DRY -eq 1 ]]; then
    echo "# $PAPER ${TABLE:-(all tables)}: runs per table (from $TABLES)"
    rows | awk -F'\t' -v p="$PAPER" -v t="$TABLE" '$1 == p && (t == "" || $2 == t) {
            k = $2 "\t" $3; if (!(k in s)) { s[k] = 1; printf "#   %-8s %-55s seeds %s\n", $2, $3, $4 } }'
fi

job=(--job-name "ggx-$PAPER${TABLE:+-$TABLE}")
[[ $HAS_NAME -eq 1 ]] && job=()
"$HERE/sweep.sh" --plan "$PLAN" "${job[@]}" "$@"
