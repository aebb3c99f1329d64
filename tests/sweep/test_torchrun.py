"""``python -m graphgps_ext.sweep.torchrun``: torchrun, stopped by a signal
(a SLURM requeue or preemption) with one line instead of a traceback."""
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORKER = r'''
import os, sys, time
open(sys.argv[1], 'w').write(os.environ.get('LOCAL_RANK', '?'))
time.sleep(120)
'''


def test_sigterm_stops_torchrun_and_its_worker_quietly(tmp_path):
    (tmp_path / 'worker.py').write_text(WORKER)
    marker = tmp_path / 'started'
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'graphgps_ext.sweep.torchrun', '--standalone',
         '--nproc_per_node=1', str(tmp_path / 'worker.py'), str(marker)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not marker.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert marker.read_text() == '0'
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert 'torchrun: stopped by SIGTERM' in err
    assert 'Traceback' not in err and 'SignalException' not in err
