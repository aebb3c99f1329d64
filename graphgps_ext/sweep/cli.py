"""``python -m graphgps_ext.sweep``: the command line of the launcher."""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, List, Optional, Sequence, Tuple

from graphgps_ext.config.train import short_run_warmup
from graphgps_ext.results.tree import Results, SearchDir, write_yaml
from graphgps_ext.sweep import grid as gridlib
from graphgps_ext.sweep import local, slurm
from graphgps_ext.sweep.plan import (Plan, SweepError, Target, agg_command, check_runs,
                                     expand_config, main_command, make_plan,
                                     never_leaves_warmup, override_keys, parse_seeds,
                                     read_plan, stacks)

PROG = 'python -m graphgps_ext.sweep'

DESCRIPTION = """\
Runs `python main.py --cfg CONFIG seed S [KEY VALUE ...]` for every config and
seed, locally (sequentially, on the CPU or as a GPU queue) or as a SLURM array
job, then aggregates each results folder once (`python -m graphgps_ext.agg`).

Each config is resolved as main.py resolves it (the package's config loading,
with the overrides), so `run_name` and `out_dir` overrides decide the results
folder <out_dir>/<run_name>/<seed>, the log folder <out_dir>/<run_name>/logs/
and the aggregation. A seed is complete, and skipped, when its `done` marker
carries the fingerprint of the run to launch; a seed finished with another
config is stale: reported with the keys that differ and rerun only with
--rerun-stale.

With --grid, a GraphGym grid file expands CONFIG into one config per point
(or --sample N random points), runs them over the seeds and ranks the points
by their mean validation metric (see docs/search.md).

Exit codes: 0 done; 1 a run or the aggregation failed (listed), or a
submission failed; 2 bad command line, config or input file."""

EPILOG = """\
examples:
  %(prog)s configs/quickstart.yaml --seeds 0-3 -- optim.max_epoch 20
  %(prog)s 'configs/geaet/*.yaml' --seeds 0-9 --gpus 0,1,2,3
  %(prog)s configs/mna/nci1.yaml --seeds 0-9 --slurm --partition gpu --throttle 8 --requeue
  %(prog)s configs/mna/nci1.yaml --grid grids/mna-nci1.txt --sample 8 --seeds 0-1
  %(prog)s --summarize results/_search/nci1_grid_mna-nci1"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage=f'{PROG} [options] CONFIG|GLOB... [-- KEY VALUE ...]')
    p.add_argument('configs', nargs='*', metavar='CONFIG|GLOB',
                   help="YAML files or quoted globs ('configs/geaet/*.yaml')")
    g = p.add_argument_group('selection')
    g.add_argument('--seeds', default=None, metavar='SEEDS',
                   help='seeds: ranges and lists, e.g. 0-9, 0,3,5, 0-3,8 (default 0)')
    g.add_argument('--plan', metavar='FILE',
                   help="lines 'CONFIG SEEDS' (per-config seeds; '#' comments); an "
                        "explicit --seeds overrides the plan's seeds")
    g.add_argument('--force', action='store_true',
                   help='rerun complete and stale seeds too (main.py --overwrite)')
    g.add_argument('--rerun-stale', action='store_true',
                   help='rerun seeds finished with another config (main.py --overwrite)')
    g.add_argument('--stack', type=int, default=None, metavar='K',
                   help='train the seeds of each config K at a time as one stacked '
                        'model (main.py --stack K, docs/stacking.md): each run, local '
                        'or SLURM task, then trains K seeds in one process')
    g.add_argument('--resume', action='store_true',
                   help='continue unfinished runs from their last checkpoint (adds '
                        'train.auto_resume True; default: they restart)')
    g = p.add_argument_group('search (GraphGym grid files)')
    g.add_argument('--grid', metavar='FILE',
                   help="grid file: lines 'key alias [v1,v2,...]' (one CONFIG: the base)")
    g.add_argument('--sample', type=int, metavar='N',
                   help='N random points of the grid instead of all of them')
    g.add_argument('--sample-seed', type=int, default=0, metavar='S',
                   help='seed of the --sample draw (default 0)')
    g.add_argument('--summarize', metavar='DIR',
                   help='only aggregate and rank the points of the search in DIR '
                        '(<results>/_search/<base>_grid_<grid>)')
    g = p.add_argument_group('local execution (default: sequential, the environment\'s devices)')
    g.add_argument('--gpus', metavar='LIST',
                   help='GPU queue, e.g. 0,1,2,3: one run per GPU at a time '
                        '(CUDA_VISIBLE_DEVICES); the next run starts when a GPU frees up')
    g.add_argument('--runs-per-gpu', type=int, default=1, metavar='K',
                   help='with --gpus: K runs at a time per GPU (each its own process); '
                        'with --slurm: K runs per array task, side by side on its GPU '
                        '(default 1)')
    g.add_argument('--cpu', action='store_true',
                   help="on the CPU (CUDA_VISIBLE_DEVICES=''), sequential unless --jobs")
    g.add_argument('--jobs', type=int, default=1, metavar='N',
                   help='with --cpu (local): N runs at a time, each with OMP_NUM_THREADS = '
                        'CPU cores / N (unless OMP_NUM_THREADS is set)')
    g = p.add_argument_group(
        'SLURM', 'With --slurm the runs become an array job (one task per run still to do;\n'
                 'scripts in <results>/_slurm/) and the aggregation a dependent job\n'
                 '(--dependency=afterany on every array). A sweep larger than the\n'
                 "cluster's MaxArraySize becomes several arrays. With --gpus-per-task\n"
                 'G > 1 or --nodes N > 1 every run is data parallel on N nodes x G GPUs\n'
                 '(srun + torchrun); with --cpu the tasks request no GPU. The partition\n'
                 'must exist, and every request is checked against it (scontrol, sinfo)\n'
                 'before submitting; seeds that queued or running tasks own are skipped\n'
                 '(squeue). Every value written into a script is quoted (a control\n'
                 'character is refused); see docs/distributed.md.')
    g.add_argument('--slurm', action='store_true', help='submit with sbatch')
    g.add_argument('--throttle', type=int, metavar='N',
                   help='at most N array tasks of the sweep at once (--array=...%%N; a sweep '
                        'of several arrays runs them one after the other)')
    g.add_argument('--time', default='24:00:00', metavar='T', help='per-task time limit (default 24:00:00)')
    g.add_argument('--mem', default='32G', metavar='M', help='memory per task (default 32G)')
    g.add_argument('--partition', default='', metavar='P')
    g.add_argument('--account', default='', metavar='A')
    g.add_argument('--nodes', type=int, default=1, metavar='N', help='nodes per run (default 1)')
    g.add_argument('--gpus-per-task', type=int, default=None, metavar='G',
                   help='GPUs per run and node (default 1, with --cpu 0)')
    g.add_argument('--cpus-per-task', type=int, default=4, metavar='C', help='CPUs per task (default 4)')
    g.add_argument('--max-array-size', type=int, default=None, metavar='N',
                   help="tasks per array job at most (default: the cluster's MaxArraySize "
                        'from scontrol show config, else 1001)')
    g.add_argument('--no-partition-check', action='store_true',
                   help='submit without checking --mem, --cpus-per-task, --gpus-per-task, '
                        '--time and --nodes against the partition')
    g.add_argument('--requeue', action='store_true',
                   help='requeue on preemption and shortly before the time limit (a tenth '
                        'of it, at most 5 min); the run resumes from its last checkpoint '
                        '(adds train.auto_resume True)')
    g.add_argument('--sbatch-opt', action='append', default=[], metavar='OPT',
                   help="extra '#SBATCH OPT' line (repeatable), e.g. --sbatch-opt --qos=high "
                        '(its value quoted); not an option the launcher sets itself '
                        '(--time, --mem, --partition, ...: use the launcher\'s own)')
    g.add_argument('--job-name', default=None, metavar='NAME', help='(default ggx-<first results name>)')
    g.add_argument('--agg-time', default=None, metavar='T',
                   help='aggregation job time (default a tenth of --time, 10 min to 1 h)')
    g.add_argument('--agg-mem', default=None, metavar='M',
                   help='aggregation job memory (default an eighth of --mem, 1 to 4 GB)')
    g.add_argument('--agg-cpus', type=int, default=None, metavar='C',
                   help='aggregation job CPUs (default 1)')
    g = p.add_argument_group('other')
    g.add_argument('--results', default=None, metavar='DIR',
                   help="results root (passed as the override out_dir; default: the "
                        "config's out_dir)")
    g.add_argument('--python', default=os.environ.get('PYTHON') or sys.executable,
                   metavar='CMD', help='Python interpreter of the runs (default: $PYTHON or '
                                       'the interpreter running the launcher)')
    g.add_argument('--main', default='main.py', metavar='FILE',
                   help='entry point (default main.py)')
    g.add_argument('--no-agg', action='store_true', help='skip the aggregation')
    g.add_argument('--dry-run', action='store_true',
                   help='print the commands (or the sbatch scripts) without running anything')
    return p


def split_argv(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Options and configs before ``--``, ``KEY VALUE`` overrides after it."""
    argv = list(argv)
    opts, overrides = (argv[:argv.index('--')], argv[argv.index('--') + 1:]) \
        if '--' in argv else (argv, [])
    # '--sbatch-opt --qos=high': the value is an sbatch option, not ours.
    joined: List[str] = []
    it = iter(opts)
    for word in it:
        if word == '--sbatch-opt':
            word = f'--sbatch-opt={next(it, "")}'
        joined.append(word)
    return joined, overrides


def _check(args, overrides: List[str]):
    if len(overrides) % 2:
        raise SweepError('overrides after -- must be KEY VALUE pairs, got: '
                         + ' '.join(overrides))
    for key, value in zip(overrides[0::2], overrides[1::2]):
        slurm.check_value(key, 'the override key')
        slurm.check_value(value, f"the value of the override '{key}'")
        # main.py reads a value that starts with '--' (or '-h') as its option:
        # refused here as there, rather than running a run that only prints help.
        if value.startswith('--') or value == '-h':
            raise SweepError(f"override '{key}' has the value '{value}', which main.py reads "
                             "as an option: give a value that does not start with '--'")
    for flag, value in (('--python', args.python), ('--main', args.main),
                        ('--results', args.results or '')):
        slurm.check_value(value, flag)
    keys = override_keys(overrides)
    if 'seed' in keys:
        raise SweepError("give seeds with --seeds, not the override 'seed'")
    if args.results and 'out_dir' in keys:
        raise SweepError("give the results root once: --results or the override 'out_dir'")
    if args.slurm and args.gpus:
        raise SweepError('--slurm and --gpus are exclusive (SLURM assigns GPUs)')
    if args.cpu and args.gpus:
        raise SweepError('--cpu and --gpus are exclusive')
    if args.jobs < 1:
        raise SweepError(f'--jobs must be >= 1, got {args.jobs}')
    if args.jobs > 1 and args.slurm:
        raise SweepError('--jobs is for local CPU runs: a SLURM array runs its tasks side by '
                         'side (--throttle N limits them; --cpus-per-task sets their CPUs)')
    if args.jobs > 1 and not args.cpu:
        raise SweepError('--jobs runs several runs at a time on the CPU: add --cpu '
                         '(GPU queues run one run per GPU: --gpus)')
    if args.runs_per_gpu < 1:
        raise SweepError(f'--runs-per-gpu must be >= 1, got {args.runs_per_gpu}')
    if args.runs_per_gpu > 1 and args.cpu:
        raise SweepError('--runs-per-gpu shares GPUs; on the CPU use --jobs N '
                         '(local) or one run per task (--slurm --cpu)')
    if args.runs_per_gpu > 1 and not (args.gpus or args.slurm):
        raise SweepError('--runs-per-gpu needs --gpus LIST (local) or --slurm')
    if args.slurm and args.cpu and args.gpus_per_task:
        raise SweepError(f'--cpu jobs request no GPU: drop --gpus-per-task '
                         f'{args.gpus_per_task}')
    if args.gpus_per_task is not None and not args.slurm:
        raise SweepError('--gpus-per-task is a SLURM request: add --slurm (locally: --gpus)')
    if args.max_array_size is not None and not args.slurm:
        raise SweepError('--max-array-size needs --slurm')
    if args.max_array_size is not None and args.max_array_size < 1:
        raise SweepError(f'--max-array-size must be >= 1, got {args.max_array_size}')
    if args.gpus and not re.fullmatch(r'\d+(,\d+)*', args.gpus):
        raise SweepError(f"--gpus must be a comma-separated list of GPU ids, got '{args.gpus}'")
    if args.stack is not None and args.stack < 2:
        raise SweepError(f'--stack must be >= 2 (seeds per stacked run), got {args.stack}')
    if args.stack is not None and args.slurm and (
            (args.gpus_per_task or 1) > 1 or args.nodes > 1):
        raise SweepError('--stack trains its seeds in one process: it cannot run data '
                         'parallel (--gpus-per-task > 1 or --nodes > 1)')
    if args.sample is not None and not args.grid:
        raise SweepError('--sample needs --grid')
    if not shlex.split(args.python):
        raise SweepError('--python must not be empty')


def _pairs(args, plan_pairs) -> List[Tuple[str, List[int]]]:
    """``[(config, seeds)]`` from the arguments, the plan file and the
    caller's plan (``run/reproduce.sh``)."""
    default = parse_seeds(args.seeds if args.seeds is not None else '0')
    items: List[Tuple[str, List[int]]] = []
    for arg in args.configs:
        items += [(c, default) for c in expand_config(arg)]
    extra = list(plan_pairs or []) + (read_plan(args.plan) if args.plan else [])
    for arg, spec in extra:
        seeds = default if args.seeds is not None else parse_seeds(spec)
        items += [(c, seeds) for c in expand_config(arg)]
    if not items:
        raise SweepError(f'no config given (see {PROG} --help)')
    check_runs(sum(len(seeds) for _, seeds in items),
               f'{len(items):,} config(s) with their seeds')
    return items


def _has_complete(target: Target) -> bool:
    from graphgps_ext.results.identity import seed_status
    from graphgps_ext.results.tree import is_seed_name
    if not os.path.isdir(target.folder):
        return False
    return any(is_seed_name(e) and seed_status(target.run_dir(int(e)), target.identity,
                                                target.data).state
               == 'complete' for e in os.listdir(target.folder))


# --------------------------------------------------------------------------- search
def _grid_pairs(args, overrides: List[str], seeds: List[int], say, scratch: Optional[str] = None
                ) -> Tuple[List[Tuple[str, List[int]]], List[str], str, dict]:
    """Write the point configs of the search; returns the pairs to run, the
    runs' overrides (without ``out_dir``: each point config holds it), the
    search folder and the search record (without fingerprints). With
    ``scratch`` (a dry run) the configs are written there instead, and the
    record names the paths they would have."""
    from graphgps_ext.config import ConfigError, closest, flatten, read_yaml
    from graphgps_ext.results.identity import effective_fingerprint
    from graphgps_ext.runs.config import default_cfg, load_cfg
    from graphgps_ext.sweep.plan import resolve
    if len(args.configs) != 1 or args.plan:
        raise SweepError('--grid takes exactly one CONFIG (the base) and no --plan')
    base = args.configs[0]
    gridlib.check_name(base, 'base config')
    if not os.path.isfile(base):
        raise SweepError(f"config file '{base}' does not exist")
    if 'run_name' in override_keys(overrides):
        raise SweepError("a search names the runs of each point itself: no 'run_name' override")
    resolved = resolve(base, overrides)  # validates the base and the overrides
    known = flatten(load_cfg(base, list(overrides) + ['accelerator', 'cpu']))
    grids = gridlib.read_grid(args.grid)
    aliases = {}
    for g in grids:
        for k in g:
            if k.key not in known:
                hint = closest(k.key, list(known))
                raise SweepError(f"{args.grid}: unknown config key '{k.key}'"
                                 + (f"; did you mean '{hint[0]}'?" if hint else ''))
            if k.key in override_keys(overrides):
                raise SweepError(f"'{k.key}' is searched by {args.grid}: do not override it")
            if k.key in gridlib.RANKING_KEYS:
                raise SweepError(f"{args.grid}: a search cannot search '{k.key}': its points "
                                 'are ranked by one validation metric in one direction; '
                                 f"set {k.key} in the base config (or after --) and run one "
                                 'search per metric')
            aliases.setdefault(k.key, k.alias)
    root = resolved.out_dir
    task = gridlib.task_name(base, args.grid)
    search_dir = Results(root).search(task)
    cfg_dir = SearchDir(search_dir).configs
    pts = gridlib.points(gridlib.stem(base), grids, args.sample, args.sample_seed)
    check_runs(len(pts) * len(seeds), f'{len(pts):,} points x {len(seeds):,} seeds')
    base_yaml = read_yaml(base)
    names = {f'{p.name}.yaml' for p in pts}
    if scratch is None:
        os.makedirs(cfg_dir, exist_ok=True)
        for old in os.listdir(cfg_dir):  # points of an earlier search of this name
            if old.endswith('.yaml') and old not in names:
                os.remove(os.path.join(cfg_dir, old))
    pairs, record, fps = [], [], []
    for p in pts:
        path = os.path.join(scratch or cfg_dir, f'{p.name}.yaml')
        tree = gridlib.point_config(base_yaml, p, out_dir=os.path.join(root, task),
                                    run_name=p.name)
        write_yaml(path, tree, f'Point {p.name} of the search {task}: {base} with '
                               f'{args.grid}\n(python -m graphgps_ext.sweep --grid).')
        try:
            cfg = load_cfg(path, list(overrides) + ['accelerator', 'cpu'])
        except ConfigError as err:
            values = ', '.join(f'{k} {v!r}' for k, v in p.values.items())
            raise SweepError(f'{args.grid}: point {p.name} ({values}) is not a valid config: '
                             f"{str(err).replace(path, 'its config')}; change the grid's "
                             'values') from None
        fps.append(effective_fingerprint(cfg, default_cfg()))
    # Points that build the same run (they differ only in keys without effect) run once.
    kept, duplicates, no_effect = gridlib.same_runs(pts, fps)
    for key in no_effect:
        say(f"# grid key '{key}' has no effect on any point of this config "
            '(e.g. an option of a branch it does not build): its values give identical runs')
    for name, same in duplicates.items():
        os.remove(os.path.join(scratch or cfg_dir, f'{name}.yaml'))
        say(f'# point {name} is the same run as {same}: run once')
    for p in kept:
        path = os.path.join(scratch or cfg_dir, f'{p.name}.yaml')
        pairs.append((path, seeds))
        record.append({'name': p.name, 'config': os.path.join(cfg_dir, f'{p.name}.yaml'),
                       'values': p.values})
    say(f'# search {task}: {len(pts)} of {gridlib.grid_size(grids)} points x {len(seeds)} '
        f'seed(s); configs in {cfg_dir}')
    if duplicates:
        say(f'# {len(kept)} distinct run(s): {len(duplicates)} point(s) repeat another')
    run_opts = []
    for k, v in zip(overrides[0::2], overrides[1::2]):
        if k != 'out_dir':
            run_opts += [k, v]
    search = {'task': task, 'base': base, 'grid': args.grid, 'sample': args.sample,
              'sample_seed': args.sample_seed, 'seeds': seeds,
              'overrides': [w for w in run_opts], 'aliases': aliases,
              'results': os.path.join(root, task), 'points': record}
    return pairs, run_opts, search_dir, search


def _write_search(search_dir: str, search: dict, plan: Plan):
    by_config = {t.config: t for t in plan.targets}
    for p in search['points']:
        t = by_config[p['config']]
        p.update(folder=t.folder, fingerprint=t.fingerprint)
    SearchDir(search_dir).write_record(search)


def summarize_command(search_dir: str, say: Callable[[str], None] = print) -> int:
    ranked, search = gridlib.summarize(search_dir)
    say(gridlib.format_summary(ranked, search))
    best = [r for r in ranked if r.rank == 1]
    if not best:
        # Nothing to rank is an answer, not a failure (the aggregation job of
        # a search whose runs all failed ends COMPLETED, saying so).
        say(f"nothing to rank: no point of {search['task']} has a finished seed (its runs "
            'failed or did not run yet; see their logs); summary written, no chosen config')
        return 0
    b = best[0]
    metric = search.get('metric')
    say(f"chosen: {b.point['name']} (val {metric} {gridlib._fmt(b.val)}, test {metric} "
        f'{gridlib._fmt(b.test)}, {b.seeds} seed(s))'
        + (f" [{' and '.join(b.flags)}: see the warnings above]" if b.flags else ''))
    folder = SearchDir(search_dir)
    say(f'summary: {folder.summary}; chosen config: {folder.chosen}')
    say(f'final run: {PROG} {folder.chosen} --seeds 0-9'
        + (f"  [screening overrides not included: {' '.join(search['overrides'])}]"
           if search['overrides'] else ''))
    return 0


# --------------------------------------------------------------------------- main
def main(argv: Optional[Sequence[str]] = None, plan_pairs=None,
         say: Callable[[str], None] = print) -> int:
    """Run the launcher; ``plan_pairs``: extra ``(config, seeds spec)`` pairs
    (``run/reproduce.sh``)."""
    opts, overrides = split_argv(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(opts)
    from graphgps_ext.config import ConfigError
    try:
        return _main(args, overrides, plan_pairs, say)
    except (SweepError, ConfigError) as err:
        print(f'sweep: error: {err}', file=sys.stderr)
        return 2


def _main(args, overrides: List[str], plan_pairs, say) -> int:
    _check(args, overrides)
    if args.summarize:
        return summarize_command(args.summarize, say)
    python = shlex.split(args.python)
    run_opts = (['out_dir', args.results.rstrip('/') or '/'] if args.results else [])
    run_opts += overrides
    if args.resume or args.requeue:
        run_opts += ['train.auto_resume', 'True']
    search_dir = search = None
    scratch = tempfile.mkdtemp(prefix='ggx-search-') if args.grid and args.dry_run else None
    try:
        if args.grid:
            seeds = parse_seeds(args.seeds if args.seeds is not None else '0')
            pairs, run_opts, search_dir, search = _grid_pairs(args, run_opts, seeds, say,
                                                              scratch)
        else:
            pairs = _pairs(args, plan_pairs)
        plan = make_plan(pairs, run_opts, force=args.force, rerun_stale=args.rerun_stale)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if search is not None:
        for t, p in zip(plan.targets, search['points']):
            t.config = p['config']  # a dry run's scratch copy: the path it would have
        if not args.dry_run:
            _write_search(search_dir, search, plan)
        aggs = [[*python, '-m', 'graphgps_ext.sweep', '--summarize', search_dir]]
    else:
        aggs = [agg_command(python, t) for t in plan.targets]
    if args.no_agg:
        aggs = []
    for line in warmup_warnings(plan.targets):
        say(line)
    opt = slurm.SlurmOptions(
        time=args.time, mem=args.mem, partition=args.partition, account=args.account,
        nodes=args.nodes,
        gpus_per_task=(0 if args.cpu else 1) if args.gpus_per_task is None else args.gpus_per_task,
        cpus_per_task=args.cpus_per_task,
        throttle=args.throttle, requeue=args.requeue,
        job_name=args.job_name or f"ggx-{search['task'] if search else plan.targets[0].name}",
        sbatch_opts=args.sbatch_opt,
        agg_time=args.agg_time, agg_mem=args.agg_mem, agg_cpus=args.agg_cpus,
        cpu=args.cpu, runs_per_task=args.runs_per_gpu if args.slurm else 1)
    if args.slurm:
        opt.check()
    owners = slurm.queued_owners() if args.slurm else None
    if args.slurm and owners is None and not args.dry_run:
        say('# squeue did not answer: seeds owned by queued tasks not checked (a task '
            'whose seed is running elsewhere stops at its seed lock)')
    plan.claim_owned(owners or {})
    skipped = (f'{len(plan.complete)} complete run(s) skipped'
               + (f', {len(plan.stale)} stale skipped' if plan.stale else '')
               + (f', {len(plan.owned)} owned by other runs skipped' if plan.owned else ''))
    notes = plan.notes()
    for line in notes:  # complete seeds only in a dry run; the others always
        if args.dry_run or not line.startswith('# skip') or 'complete' not in line:
            say(line)
    if args.stack:  # each config's seeds to run, args.stack to a run
        plan.runs = stacks(plan.runs, args.stack)
    if plan.runs and not args.dry_run and not os.path.isfile(args.main):
        raise SweepError(f"entry point '{args.main}' not found: run from the repository "
                         'root or pass --main')
    if args.slurm:  # scripts in <results root>/_slurm (a search's root, not its folder)
        root = os.path.dirname(search['results']) if search else plan.targets[0].out_dir
        folders = None if search else [(t.folder, t.fingerprint) for t in plan.targets]
        return _slurm(args, plan, python, opt, aggs, folders, skipped,
                      Results(root).slurm, say)
    return _local(args, plan, python, aggs, skipped, search_dir, say)


def warmup_warnings(targets: Sequence[Target]) -> List[str]:
    """A warning per config whose runs never leave the learning-rate
    warm-up (:func:`~graphgps_ext.sweep.plan.never_leaves_warmup`): their
    results say nothing about the config."""
    out = []
    for t in targets:
        if never_leaves_warmup(t.identity):
            i = t.identity
            out.append(f"# warning: {t.name}: optim.max_epoch {i['optim.max_epoch']} <= "
                       f"optim.num_warmup_epochs {i['optim.num_warmup_epochs']}: the "
                       f"learning rate never leaves the warm-up ({i['optim.scheduler']}); "
                       'for a short trial add `optim.num_warmup_epochs '
                       f"{short_run_warmup(i['optim.max_epoch'])}` after --")
    return out


def _local(args, plan: Plan, python, aggs, skipped: str, search_dir, say) -> int:
    devices = (args.gpus.split(',') if args.gpus else [] if args.cpu else None)
    threads = local.threads_per_job(args.jobs)
    k = args.runs_per_gpu
    if args.dry_run:
        say('# ' + (f'GPU queue on {args.gpus}: {k} run(s) per GPU at a time '
                    '(CUDA_VISIBLE_DEVICES=<gpu>)' if args.gpus else
                    f"{args.jobs} runs at a time on CPU (CUDA_VISIBLE_DEVICES='', "
                    f'OMP_NUM_THREADS={threads})' if args.jobs > 1 else
                    "sequential on CPU (CUDA_VISIBLE_DEVICES='')" if args.cpu else 'sequential'))
        for t in plan.targets:
            say(f'# {t.config}: results {t.folder}/<seed>, logs {t.folder}/logs, '
                f'fingerprint {t.fingerprint}')
        for run in plan.runs:
            say(f'{shlex.join(main_command(python, args.main, run))} >> '
                f'{shlex.quote(run.log)} 2>&1')
        say(f'# {len(plan.runs)} run(s), {skipped}')
        if aggs:
            say('# after all runs:')
            for cmd in aggs:
                say(shlex.join(cmd))
        return 0
    say(f'# {len(plan.runs)} run(s) to do, {skipped}')
    failed = local.run_all(plan.runs, python, args.main, devices, say,
                           jobs=args.jobs, threads=threads, per_gpu=k)
    agg_failed = False
    if aggs and search_dir is not None:
        agg_failed = subprocess.run(aggs[0]).returncode not in (0,)
    elif aggs:
        for t, cmd in zip(plan.targets, aggs):
            if _has_complete(t):
                say(f'[{local._now()}] aggregate {t.folder}')
                agg_failed |= subprocess.run(cmd).returncode != 0
            else:
                say(f'# no complete run of {t.name}: not aggregated')
    if failed:
        print(f'{len(failed)} run(s) failed:', file=sys.stderr)
        for line in failed:
            print(f'  {line}', file=sys.stderr)
        return 1
    if agg_failed:
        print('aggregation failed', file=sys.stderr)
        return 1
    return 0


def _slurm(args, plan: Plan, python, opt: slurm.SlurmOptions, aggs, folders, skipped: str,
           slurm_dir: str, say) -> int:
    if not plan.runs:
        say(f'# nothing to run: all {len(plan.complete)} runs are complete'
            + (f' ({len(plan.stale)} stale skipped)' if plan.stale else '')
            + (f' ({len(plan.owned)} owned by queued or running tasks)' if plan.owned else ''))
        if args.dry_run:
            for cmd in aggs:
                say(shlex.join(cmd))
        return 0
    if args.no_partition_check:
        say('# partition not checked (--no-partition-check)')
    else:
        for line in slurm.check_partitions(opt):
            say(line)
    if args.max_array_size is not None:
        size, source = args.max_array_size, '--max-array-size'
    else:
        size, source = slurm.max_array_size()
    parts = slurm.split(plan.runs, size, opt.runs_per_task)
    root = os.getcwd()
    slurm_dir = os.path.join(root, slurm_dir)
    if args.dry_run:
        scripts, agg = slurm.script_paths(slurm_dir, opt.job_name, len(parts))
    else:
        scripts, agg = slurm.reserve_scripts(slurm_dir, opt.job_name, len(parts), bool(aggs))
    agg_path = agg if aggs else None
    texts = [slurm.array_script(runs, python, args.main, opt, root, slurm_dir, script, agg_path)
             for runs, script in zip(parts, scripts)]
    agg_text = slurm.agg_script(aggs, opt, root, slurm_dir, folders) if aggs else None
    tasks = [-(-len(runs) // opt.runs_per_task) for runs in parts]
    per = f', {opt.runs_per_task} runs per task' if opt.runs_per_task > 1 else ''
    # With a throttle, each array waits for the one before: the throttle
    # (a limit per array job in SLURM) holds over the whole sweep.
    chain = bool(opt.throttle) and len(parts) > 1
    if len(parts) > 1:
        say(f'# {len(plan.runs)} runs in {sum(tasks)} tasks{per} exceed the array size '
            f'{size} ({source}): {len(parts)} array jobs of {", ".join(map(str, tasks))} '
            'tasks' + (f', one after the other (--throttle {opt.throttle} over the whole '
                       'sweep)' if chain else '')
            + ('; the aggregation after all of them' if agg_text else ''))
    if args.dry_run:
        for n, (script, text) in enumerate(zip(scripts, texts)):
            say(f'# --- {script} ({tasks[n]} tasks, {len(parts[n])} runs{per}'
                + (f'; {skipped})' if n == 0 else ')'))
            say(text.rstrip('\n'))
        if agg_text:
            say(f'# --- {agg}')
            say(agg_text.rstrip('\n'))
        say('# --- submission')
        ids = [f'<jobid{n + 1}>' if len(scripts) > 1 else '<jobid>' for n in range(len(scripts))]
        for n, script in enumerate(scripts):
            dep = f'--dependency=afterany:{ids[n - 1]} ' if chain and n else ''
            say(f'sbatch --parsable {dep}{shlex.quote(script)}')
        if agg_text:
            say(f"sbatch --parsable --dependency=afterany:{':'.join(ids)} {shlex.quote(agg)}")
        return 0
    from graphgps_ext.files import write_text
    jobids: List[str] = []
    for n, (script, text) in enumerate(zip(scripts, texts)):
        write_text(script, text)
        try:
            dep = [f'--dependency=afterany:{jobids[-1]}'] if chain and n else []
            jobids.append(slurm.sbatch([*dep, script]))
        except RuntimeError as err:
            print(f'sweep: sbatch refused the array job {script}: {err}'
                  + (f' (array jobs {", ".join(jobids)} are submitted; rerun the same '
                     'command after fixing: it skips the seeds they own)' if jobids else ''),
                  file=sys.stderr)
            return 1
        say(f'submitted array job {jobids[-1]} ({tasks[n]} tasks{per}'
            + (f'; {skipped}' if n == 0 else '')
            + (f'; after {jobids[-2]}' if chain and n else '') + f'): {script}')
    if agg_text:
        write_text(agg, agg_text)
        try:
            aggid = slurm.sbatch([f'--dependency=afterany:{":".join(jobids)}', agg])
        except RuntimeError as err:
            print(f'sweep: sbatch refused the aggregation job ({err}); the runs are '
                  f'submitted: aggregate after them with --agg-mem/--agg-time/--agg-cpus '
                  f'set, or run: ' + '; '.join(shlex.join(c) for c in aggs), file=sys.stderr)
            return 1
        write_text(agg + '.jobid', aggid + '\n')  # read by a restarted task
        say(f'submitted aggregation job {aggid} (after {", ".join(jobids)}): {agg}')
    return 0
