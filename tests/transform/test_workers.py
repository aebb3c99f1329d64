"""The precompute's worker pool stops whatever SIGTERM handler its parent
has (main.py's, or SIGTERM ignored while a run stops)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Terminated with tasks queued, the pool holds the task queue's lock while
# it drains it: a worker waiting for that lock stops only by SIGTERM (a
# plain fork pool under SIGTERM ignored hangs here).
SCRIPT = '''
import signal, time
from graphgps_ext.transform.workers import fork_pool
for handler in (signal.SIG_IGN, lambda *a: None):
    signal.signal(signal.SIGTERM, handler)
    pool = fork_pool(2)
    print(pool.apply(abs, (-3,)))
    pool.map_async(time.sleep, [0.2] * 40, chunksize=1)
    time.sleep(0.3)
    pool.terminate()
    pool.join()
    print('stopped')
'''


def test_pool_stops_whatever_the_parent_does_with_sigterm():
    # SIGTERM ignored, then handled (one interpreter: its start is most of
    # the time)
    proc = subprocess.run([sys.executable, '-c', SCRIPT],
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['3', 'stopped'] * 2
