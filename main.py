"""Train and evaluate a config over one or more seeds.

    python main.py --cfg configs/quickstart.yaml
    python main.py --cfg FILE --repeat 3 optim.max_epoch 50 train.auto_resume True
    python main.py --cfg FILE --seeds 0,1,2 --mark_done

Data parallel on G GPUs (or G CPU processes with gloo), see README
"Multi-GPU and clusters":

    torchrun --nproc_per_node G main.py --cfg FILE [KEY VALUE ...]
    srun --ntasks-per-node G python main.py --cfg FILE   (inside a SLURM job)

Exit codes: 0 done; 2 bad config or command line; 3 NaN/inf loss;
5 data missing or corrupt; 130 interrupted (Ctrl-C / SIGTERM; resumable
with ``train.auto_resume True``).
"""
import argparse
import os
import signal
import sys
from typing import List, Optional


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Train graphgps_ext models (GraphGym config + overrides).')
    parser.add_argument('--cfg', dest='cfg_file', required=True,
                        help='YAML config file')
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--repeat', type=int, default=1,
                       help='run seeds seed, seed+1, ..., seed+N-1 (default 1)')
    group.add_argument('--seeds', type=str, default=None,
                       help='comma-separated seeds, e.g. 0,1,2 (overrides seed)')
    parser.add_argument('--mark_done', action='store_true',
                        help='rename the config file to <file>.done when every '
                             'seed has finished (GraphGym sweep convention)')
    parser.add_argument('opts', nargs=argparse.REMAINDER, default=[],
                        help='KEY VALUE overrides, e.g. optim.base_lr 0.001')
    return parser.parse_args(argv)


def seeds_of(args, base_seed: int) -> List[int]:
    if args.seeds is not None:
        try:
            return [int(s) for s in args.seeds.split(',') if s.strip()]
        except ValueError:
            raise SystemExit(f'error: --seeds takes comma-separated integers, '
                             f'got {args.seeds!r}') from None
    if args.repeat < 1:
        raise SystemExit('error: --repeat must be >= 1')
    return list(range(base_seed, base_seed + args.repeat))


def _sigterm(signum, frame):
    # A scheduler's SIGTERM (preemption) is handled like Ctrl-C.
    raise KeyboardInterrupt


def main(argv: Optional[List[str]] = None) -> int:
    os.environ.setdefault('WANDB_SILENT', 'true')
    args = parse_args(argv)
    from graphgps_ext import dist
    from graphgps_ext.config import ConfigError
    from graphgps_ext.config.load import load_cfg
    from graphgps_ext.loader.errors import EXIT_CODE as DATA_ERROR, DataError
    from graphgps_ext.logger import get_logger
    from graphgps_ext.run import run_seed
    from graphgps_ext.train.loop import NonFiniteLossError

    signal.signal(signal.SIGTERM, _sigterm)
    rank = 0
    try:
        cfg = load_cfg(args.cfg_file, args.opts)
        seeds = seeds_of(args, cfg.seed)
        rank = dist.init(cfg).rank  # joins the process group (torchrun / srun)
        for seed in seeds:
            cfg = load_cfg(args.cfg_file, args.opts + ['seed', str(seed)])
            run_seed(cfg, cfg_file=args.cfg_file)
        dist.barrier()
    except ConfigError as err:
        print(f'config error: {err}', file=sys.stderr)
        return 2
    except DataError as err:
        print(f'data error: {err}', file=sys.stderr)
        return DATA_ERROR
    except NonFiniteLossError:
        return 3  # already logged with the epoch/batch and what to change
    except KeyboardInterrupt:
        get_logger().error('stopped by interrupt')
        return 130
    finally:
        dist.cleanup()
    if args.mark_done and rank == 0:
        os.replace(args.cfg_file, args.cfg_file + '.done')
    return 0


if __name__ == '__main__':
    sys.exit(main())
