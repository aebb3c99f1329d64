"""Train and evaluate a config over one or more seeds.

    python main.py --cfg configs/quickstart.yaml
    python main.py --cfg FILE --repeat 3 optim.max_epoch 50 train.auto_resume True
    python main.py --cfg FILE --seeds 0,1,2 --mark_done
    python main.py --cfg FILE --dry-run     (check it; build the model, no data)
    python main.py --cfg FILE --overwrite        (replace finished seeds)
    python main.py --cfg FILE --seeds 0-9 --stack 10  (ten seeds, one stacked model)

A finished seed (its folder holds ``done``) is reported and skipped, as
``complete`` (same config) or ``stale`` (with the keys that differ), unless
``--overwrite`` is given. With ``train.auto_resume True`` an unfinished seed
continues from its checkpoint; changed optimiser hyper-parameters take
effect, other changes are refused. See docs/runs.md.

With ``--stack K`` the seeds train K at a time as one stacked model in one
process, each in its ordinary seed folder (docs/stacking.md).

Data parallel on G GPUs (or G CPU processes with gloo), see README
"Multi-GPU and clusters":

    torchrun --nproc_per_node G main.py --cfg FILE [KEY VALUE ...]
    srun --ntasks-per-node G python main.py --cfg FILE   (inside a SLURM job)

Exit codes:

    0    every seed finished, or was skipped as finished
    2    bad config or command line; the seed is in use by another process;
         a resume that would change keys other than optimiser settings, or
         the data; a seed folder reached through a symbolic link below
         out_dir, or a damaged one; a --stack that cannot run (one seed, K
         above the seeds listed, data parallel, seeds whose configs differ,
         too little memory)
    3    NaN/inf loss (the message names the likely cause and the key to
         change on resume)
    4    could not write results (disk full, quota, read-only file system,
         permission, a path too long; the message says which; resumable once
         fixed)
    5    data missing or corrupt (the file, folder and URL are named)
    6    a checkpoint was refused: unsafe (a pickle that could run code), or
         unreadable with no good previous checkpoint
    130  interrupted (Ctrl-C / SIGTERM; resumable)
    1    anything else (a bug: please report the traceback)
"""
import argparse
import os
import signal
import sys
from typing import Callable, List, Optional, Sequence, Tuple, Type

#: Exit codes (see the module docstring).
(EXIT_OK, EXIT_USAGE, EXIT_NAN, EXIT_WRITE, EXIT_DATA, EXIT_CHECKPOINT,
 EXIT_INTERRUPT) = (0, 2, 3, 4, 5, 6, 130)


def _seed_list(text: str) -> List[int]:
    from graphgps_ext.runs.seed_lists import TooManySeeds, parse_seeds
    if not text.replace(',', '').strip():
        raise argparse.ArgumentTypeError(f'no seed in {text!r}')
    try:
        return parse_seeds(text)
    except TooManySeeds as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    except ValueError:
        raise argparse.ArgumentTypeError(
            'takes comma-separated integers or ranges, e.g. 0,1,2 or 0-4,8; '
            f'got {text!r}') from None


def _repeat(text: str) -> int:
    from graphgps_ext.runs.seed_lists import MAX_SEEDS
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_SEEDS:
        raise argparse.ArgumentTypeError(
            f'takes an integer from 1 to {MAX_SEEDS:,} (seeds seed .. seed+N-1), '
            f'got {text!r}')
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f'takes an integer >= 1, got {text!r}')
    return value


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The command line; a bad one exits with code 2 (argparse's usage error)."""
    parser = argparse.ArgumentParser(
        description='Train graphgps_ext models (GraphGym config + overrides).')
    parser.add_argument('--cfg', dest='cfg_file', required=True,
                        help='YAML config file')
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--repeat', type=_repeat, default=1,
                       help='run seeds seed, seed+1, ..., seed+N-1 (default 1)')
    group.add_argument('--seeds', type=_seed_list, default=None,
                       help='seeds, e.g. 0,1,2 or 0-4 (overrides seed)')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace finished seeds (and start unfinished ones '
                             'afresh even with train.auto_resume True)')
    parser.add_argument('--mark_done', action='store_true',
                        help='rename the config file to <file>_done when every '
                             'seed has finished (as GraphGym)')
    parser.add_argument('--stack', type=_positive, default=None, metavar='K',
                        help='train the seeds K at a time as one stacked model '
                             '(one process; see docs/stacking.md)')
    parser.add_argument('--dry-run', action='store_true',
                        help='validate the config, build the model from the '
                             "dataset's known shapes (no data), print the "
                             'layer stack, parameter count and results '
                             'folders, and exit (see graphgps_ext.dry_run)')
    parser.add_argument('opts', nargs=argparse.REMAINDER, default=[],
                        help='KEY VALUE overrides, e.g. optim.base_lr 0.001')
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    # Options written after the overrides (``... optim.base_lr 0.1
    # --overwrite``) are options too: no config key starts with '--'. The
    # overrides are read as KEY VALUE pairs: a VALUE that reads as an option
    # (``run_name --help``) is refused, neither taken as the option nor
    # passed on as a value.
    options = parser._option_string_actions
    flags, opts, i = [], [], 0
    while i < len(args.opts):
        word = args.opts[i]
        action = options.get(word)
        if action is not None and word.startswith('--'):
            width = 1 if action.nargs == 0 else 2
            flags += args.opts[i:i + width]
            i += width
            continue
        pair = args.opts[i:i + 2]
        if len(pair) == 2 and (pair[1].startswith('--') or pair[1] in options):
            parser.error(f"override '{word}' has the value '{pair[1]}', which reads as an "
                         'option: give KEY VALUE pairs whose values do not start with '
                         "'--' (options go before or after the pairs)")
        opts += pair
        i += 2
    if flags:
        args = parser.parse_args(argv[:len(argv) - len(args.opts)] + flags)
        args.opts = opts
    return args


def _sigterm(signum, frame):
    # A scheduler's SIGTERM (preemption) is handled like Ctrl-C. Once: a
    # requeue sends SIGTERM again (scontrol requeue and the task's own), which
    # would interrupt the clean-up (atexit handlers) with a traceback.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


Failure = Tuple[Type[BaseException], int, Callable[[BaseException, str], str]]


def failures() -> List[Failure]:
    """``(exception type, exit code, message(err, resume command))`` for
    every failure main.py answers without a traceback; the first match
    wins. An empty message means the error was logged already."""
    from graphgps_ext.config import ConfigError
    from graphgps_ext.loader.errors import DataError
    from graphgps_ext.runs.seed import StartRefused
    from graphgps_ext.files import ResultsWriteError
    from graphgps_ext.results.tree import UnsafePath
    from graphgps_ext.train.checkpoint import CheckpointError
    from graphgps_ext.train.loop import NonFiniteLossError
    return [
        (ConfigError, EXIT_USAGE, lambda e, cmd: f'config error: {e}'),
        (StartRefused, EXIT_USAGE, lambda e, cmd: f'error: {e}'),
        (DataError, EXIT_DATA, lambda e, cmd: f'data error: {e}'),
        (NonFiniteLossError, EXIT_NAN, lambda e, cmd: ''),
        (UnsafePath, EXIT_USAGE, lambda e, cmd: f'error: {e}'),
        (ResultsWriteError, EXIT_WRITE, lambda e, cmd: (
            f'error: {e}. {e.advice} (what was written so far, the last good '
            f'checkpoint included, is kept), then continue with: {cmd}')),
        (CheckpointError, EXIT_CHECKPOINT, lambda e, cmd: (
            f'error: {e}. To start this seed afresh instead, add --overwrite.')),
        (KeyboardInterrupt, EXIT_INTERRUPT, lambda e, cmd: 'stopped by interrupt'),
    ]


def answer(err: BaseException, resume_cmd: str,
           table: Sequence[Failure]) -> Optional[int]:
    """Print ``err``'s message and return its exit code (``None``: not a
    failure of the table, let it raise)."""
    for kind, code, message in table:
        if isinstance(err, kind):
            text = message(err, resume_cmd)
            if text:
                print(text, file=sys.stderr, flush=True)
            return code
    return None


def main(argv: Optional[List[str]] = None) -> int:
    os.environ.setdefault('WANDB_SILENT', 'true')
    args = parse_args(argv)
    if args.dry_run:
        from graphgps_ext.dry_run import main as dry_run
        return dry_run(args.cfg_file, args.opts, args.seeds, args.repeat)
    from graphgps_ext import dist
    from graphgps_ext.config import check_overrides
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.runs.seed import resume_command, run_seed
    from graphgps_ext.runs.seed_lists import seed_list

    previous = signal.signal(signal.SIGTERM, _sigterm)
    table = failures()
    rank, seed, stacked = 0, None, []
    try:
        check_overrides(args.opts)
        cfg = load_cfg(args.cfg_file, args.opts)
        seeds = seed_list(cfg, args.seeds, args.repeat)
        if args.stack is not None:
            from graphgps_ext.runs.stack import check_stack_args
            check_stack_args(seeds, args.stack,
                             dist.detect(cfg.dist.launcher).world_size)
        rank = dist.init(cfg).rank  # joins the process group (torchrun / srun)
        if args.stack is not None:
            from graphgps_ext.runs.stack import run_seeds
            stacked = seeds
            run_seeds(args.cfg_file, args.opts, seeds, args.stack,
                      overwrite=args.overwrite)
            seeds = []
        for seed in seeds:
            cfg = load_cfg(args.cfg_file, args.opts + ['seed', str(seed)])
            run_seed(cfg, cfg_file=args.cfg_file, opts=args.opts,
                     overwrite=args.overwrite)
        dist.barrier()
    except BaseException as err:  # noqa: B902 (answered or re-raised)
        if args.stack is not None and stacked:
            from graphgps_ext.runs.stack import stack_command
            cmd = stack_command(args.cfg_file, args.opts, stacked, args.stack)
        else:
            cmd = resume_command(args.cfg_file, args.opts, seed or 0)
        code = answer(err, cmd, table)
        if code is None:
            raise
        return code
    finally:
        dist.cleanup()
        # Called in-process (tests, notebooks): the caller's handler comes
        # back, unless a SIGTERM came (the process is stopping; a second one
        # must not interrupt its clean-up).
        if signal.getsignal(signal.SIGTERM) is _sigterm:
            signal.signal(signal.SIGTERM, previous)
    if args.mark_done and rank == 0:
        os.replace(args.cfg_file, args.cfg_file + '_done')
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
