"""``python -m graphgps_ext.sweep.torchrun ARGS``: ``torchrun ARGS``, stopped
quietly by a signal.

The SLURM array tasks of data-parallel runs start their workers with this
module. A requeue or preemption sends ``SIGTERM`` to the ``torchrun`` agent,
which stops its workers (they save nothing more: each resumes from its last
checkpoint) and then raises ``SignalException`` with a traceback in the log.
Here the agent instead prints one line and exits with ``128 + signal``, the
shell's code for a process stopped by that signal.
"""
import sys


def main(argv=None) -> int:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main as torchrun
    try:
        torchrun(argv)
    except SignalException as err:
        print(f'torchrun: stopped by {err.sigval.name}; the workers were stopped',
              file=sys.stderr, flush=True)
        return 128 + int(err.sigval)
    return 0


if __name__ == '__main__':
    sys.exit(main())
