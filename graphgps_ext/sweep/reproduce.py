"""``python -m graphgps_ext.sweep.reproduce``: every config of a paper, or
of one of its tables or figures, with the paper's number of seeds, as one
sweep (``run/reproduce.sh`` is a wrapper).

The mapping paper/table -> configs and seeds is data: ``run/tables.tsv``
(columns ``paper table config seeds ref_table dataset model metric split``,
read by :func:`graphgps_ext.report.read_tables`). A config used by several
tables runs once per seed.
"""
import os
import sys
from typing import Dict, List, Optional, Sequence

from graphgps_ext.sweep import cli

PROG = 'python -m graphgps_ext.sweep.reproduce'
USAGE = f"""\
usage: {PROG} <paper> [<table>] [sweep options] [-- KEY VALUE ...]
       {PROG} --list [<paper>]

  <paper>   geaet | csa | mna | gt | gps
  <table>   a table or figure of that paper, e.g. table1, table4, fig7
            (default: every table of the paper)

The mapping paper/table -> configs and seeds is data: run/tables.tsv (columns
paper, table, config, seeds, ref_table, dataset, model, metric, split; another
file with --tables FILE or the variable TABLES). Every option after the
paper/table goes to python -m graphgps_ext.sweep (--gpus, --cpu, --slurm,
--dry-run, --seeds to override the paper's seeds, overrides after --, ...).

examples:
  run/reproduce.sh geaet --dry-run           # list every GEAET run
  run/reproduce.sh mna table2 --gpus 0,1     # MNA-GT Table 2, 10 seeds, 2 GPUs
  run/reproduce.sh csa table1 --slurm --partition gpu --throttle 8 --requeue"""


def default_tables() -> str:
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get('TABLES') or os.path.join(here, 'run', 'tables.tsv')


def _die(msg: str) -> int:
    print(f'reproduce: error: {msg}', file=sys.stderr)
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    from graphgps_ext.report import read_tables
    argv = list(sys.argv[1:] if argv is None else argv)
    tables_path = default_tables()
    if argv[:1] == ['--tables'] and len(argv) > 1:
        tables_path, argv = argv[1], argv[2:]
    if not argv or argv[0] in ('-h', '--help'):
        print(USAGE)
        return 0
    if not os.path.isfile(tables_path):
        return _die(f"table file '{tables_path}' not found")
    try:
        rows = read_tables(tables_path)
    except ValueError as err:
        return _die(str(err))
    papers = list(dict.fromkeys(r['paper'] for r in rows))
    if argv[0] == '--list':
        want = argv[1] if len(argv) > 1 else None
        counts: Dict[tuple, set] = {}
        for r in rows:
            if want in (None, r['paper']):
                counts.setdefault((r['paper'], r['table']), set()).add(r['config'])
        for (paper, table), configs in counts.items():
            print(f'{paper:<6} {table:<8} {len(configs):3d} configs')
        return 0
    paper, rest = argv[0], argv[1:]
    if paper not in papers:
        return _die(f"unknown paper '{paper}'; known: {' '.join(papers)}")
    tables = list(dict.fromkeys(r['table'] for r in rows if r['paper'] == paper))
    table = None
    if rest and not rest[0].startswith('-'):
        table, rest = rest[0], rest[1:]
        if table not in tables:
            return _die(f"paper '{paper}' has no table '{table}'; known: {' '.join(tables)}")
    chosen = [r for r in rows if r['paper'] == paper and table in (None, r['table'])]
    missing = sorted({r['config'] for r in chosen if not os.path.isfile(r['config'])})
    if missing:
        return _die('configs listed in the table file are missing (run from the repository '
                    'root): ' + ', '.join(missing))
    pairs: List[tuple] = list(dict.fromkeys((r['config'], r['seeds']) for r in chosen))
    opts = rest[:rest.index('--')] if '--' in rest else rest
    if '--dry-run' in opts:
        shown = os.path.relpath(tables_path)
        shown = tables_path if shown.startswith('..') else shown
        print(f"# {paper} {table or '(all tables)'}: runs per table (from {shown})")
        for r in dict.fromkeys((r['table'], r['config'], r['seeds']) for r in chosen):
            print(f'#   {r[0]:<8} {r[1]:<55} seeds {r[2]}')
    if '--job-name' not in opts and not any(o.startswith('--job-name=') for o in opts):
        rest = ['--job-name', f"ggx-{paper}{'-' + table if table else ''}"] + rest
    return cli.main(rest, plan_pairs=pairs)


if __name__ == '__main__':
    sys.exit(main())
