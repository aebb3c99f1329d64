"""The ``profile`` suite rehearsed on the CPU at small sizes."""
import json

import pytest
import torch

from graphgps_ext.bench import main, profile

TINY = ['gt.layers', '1', 'train.batch_size', '4']


def test_busy_fraction_is_the_union_of_the_intervals():
    # [0, 4) and [2, 6) overlap: 6 busy units; [8, 9): 1 more; of 10
    assert profile.busy_fraction([(2, 6), (0, 4), (8, 9)], 10) == pytest.approx(0.7)
    assert profile.busy_fraction([(0, 2), (0.5, 1)], 4) == pytest.approx(0.5)
    assert profile.busy_fraction([], 10) is None
    assert profile.busy_fraction([(0, 20)], 10) == 1.0


def test_profile_rehearsal_on_the_cpu(tmp_path):
    out = tmp_path / 'profile.json'
    assert main(['--suite', 'profile', '--rows', 'gps-gine', '--profile-steps', '3',
                 '--profile-warmup', '2', '--opts', *TINY, '--threads', '0',
                 '--mem-limit-gib', '0', '--out', str(out)]) == 0
    res = json.loads(out.read_text())['suites']['profile']
    (row, ) = res['rows']
    assert row['key'] == 'gps-gine' and row['path'] == 'fast' and row['steps'] == 3
    assert 0 < len(row['top']) <= profile.TOP
    assert all(t['name'].startswith('aten::') for t in row['top'])
    assert sum(t['share'] for t in row['top']) <= 1 + 1e-9
    assert row['top'][0]['us_per_step'] >= row['top'][-1]['us_per_step']
    assert row['ops_per_step'] > 100 and row['step_ms'] > 0
    # no device on the CPU
    assert row['launches_per_step'] is None and row['device_busy_fraction'] is None
    assert '| operator |' in res['markdown']


def test_profile_counts_the_operators_of_a_step():
    """Operators per step are a per-step figure: the same whether 2 or 4
    steps are profiled (the eager path, whose steps are alike)."""
    cpu = torch.device('cpu')
    res = profile.run(cpu, rows=['gt'], steps=2, warmup=1, opts=TINY, fast=False,
                      log=lambda *a: None)
    again = profile.run(cpu, rows=['gt'], steps=4, warmup=1, opts=TINY,
                        fast=False, log=lambda *a: None)
    assert res['rows'][0]['path'] == 'eager'
    assert res['rows'][0]['ops_per_step'] == again['rows'][0]['ops_per_step']


def test_cuda_summary_ranks_the_device_events():
    """The CUDA figures from a profile (faked: no GPU here): kernels ranked
    by their own time, not the CPU operators that launched them; launches
    counted from the runtime's calls; busy fraction from kernel intervals."""
    from types import SimpleNamespace as NS
    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    def evt(key, count=1, device=cpu, us=0.0, start=0.0, end=0.0, parent=None):
        return NS(key=key, count=count, device_type=device,
                  self_device_time_total=us, self_cpu_time_total=1.0,
                  time_range=NS(start=start, end=end), cpu_parent=parent)
    mm = evt('aten::mm', 2, us=30.0)  # a CPU operator with its kernels' time
    averages = [mm, evt('cudaLaunchKernel', 4), evt('cudaGraphLaunch', 2),
                evt('gemm_kernel', 2, cuda, 30.0), evt('add_kernel', 2, cuda, 10.0)]
    events = [mm, evt('aten::mm', parent=mm),
              evt('gemm_kernel', device=cuda, start=0, end=15),
              evt('gemm_kernel', device=cuda, start=40, end=55),
              evt('add_kernel', device=cuda, start=10, end=20)]
    prof = NS(key_averages=lambda: averages, events=lambda: events)
    out = profile.summarize(prof, steps=2, wall_us=100.0, cuda=True)
    assert [t['name'] for t in out['top']] == ['gemm_kernel', 'add_kernel']
    assert out['top'][0]['us_per_step'] == 15.0 and out['top'][0]['share'] == 0.75
    assert out['launches_per_step'] == 3.0 and out['kernels_per_step'] == 1.5
    assert out['device_busy_fraction'] == pytest.approx(0.35)  # [0, 20) + [40, 55)
    assert out['ops_per_step'] == 0.5  # one top-level aten:: event in 2 steps
