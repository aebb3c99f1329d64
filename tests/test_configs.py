"""Every shipped config (``configs/*/*.yaml``): it is up to date with
``run/make_configs.py``, it loads, its model built from the dataset's metadata
(no data) has the authors' parameter count and stays within the paper's
budget, and it trains for one step on tiny graphs shaped like the dataset's.

Counts are checked at the real dimensions. The header of a config states
``# params: N (source)`` (the authors' count, or ``none``), one
``# params differ: ±n (reason)`` line per module, width or table size in
which the model differs from the authors', ``# budget: N (source)`` (or
``none``) and, only for a count a paper rounds, ``# tolerance: x (reason)``:

- with a count: ``ours == N + sum(n)`` exactly (or ``|ours - N| / N <= x``
  with a stated tolerance);
- with a budget ``B``: ``ours <= 1.05 * max(B, N)`` (the papers' own models
  exceed their nominal budgets by up to 13 %, e.g. GEAET CIFAR10 113k for
  "~100k").
"""
import glob
import importlib.util
import os
import re
import sys

import pytest
import torch
from torch_geometric.data import Batch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from config_data import task_for, tiny_graphs  # noqa: E402
import model_records  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(os.path.relpath(p, ROOT)
                 for p in glob.glob(os.path.join(ROOT, 'configs', '*', '*.yaml')))


def header(path):
    """``{'params': (int|None, text), 'budget': ..., 'tolerance': (float, reason),
    'differ': [(int, reason), ...]}``."""
    out = {'differ': []}
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            if not line.startswith('#'):
                break
            m = re.match(r'# params differ: ([+-]\d+) \((.+)\)$', line.rstrip())
            if m:
                out['differ'].append((int(m.group(1)), m.group(2)))
                continue
            m = re.match(r'# (params|budget|tolerance): (\S+)(?: \((.*)\))?$', line.rstrip())
            if m:
                key, value, why = m.groups()
                num = None if value == 'none' else (float(value) if key == 'tolerance'
                                                    else int(value))
                out[key] = (num, why or '')
    return out


def expected_params(h):
    """``(published, published + sum of the stated differences)``, or
    ``(None, None)`` without a published count."""
    published = h['params'][0]
    if published is None:
        return None, None
    return published, published + sum(n for n, _ in h['differ'])


def _generator():
    spec = importlib.util.spec_from_file_location(
        'make_configs', os.path.join(ROOT, 'run', 'make_configs.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_configs_and_tables_are_generated_and_up_to_date(capsys):
    assert len(CONFIGS) > 200
    gen = _generator()
    assert gen.write_all(check=True) == 0, capsys.readouterr().out


def test_headers_state_params_and_budget_with_sources():
    for path in CONFIGS:
        h = header(path)
        assert 'params' in h and 'budget' in h, path
        assert h['params'][1] and h['budget'][1], f'{path}: say where the numbers come from'
        if 'tolerance' in h:
            assert h['params'][0] is not None and h['tolerance'][1], path
            assert not h['differ'], f'{path}: a rounded count has no exact differences'
        if h['differ']:
            assert h['params'][0] is not None, f'{path}: differences from which count?'
            assert all(n != 0 and why for n, why in h['differ']), path


def test_header_parsing_of_differences(tmp_path):
    """The exact check reads every ``params differ`` line (a test that can fail)."""
    f = tmp_path / 'c.yaml'
    f.write_text('# t\n# params: 1000 (x)\n# params differ: -30 (a (b) c)\n'
                 '# params differ: +5 (d)\n# budget: none (y)\ngt: {}\n')
    h = header(str(f))
    assert h['differ'] == [(-30, 'a (b) c'), (5, 'd')]
    assert expected_params(h) == (1000, 975)


def test_encoder_batchnorm_is_explicit():
    """GraphGym's defaults put a BatchNorm after the node and edge encoders;
    every config states the authors' choice instead of inheriting them."""
    import yaml
    for path in CONFIGS:
        with open(os.path.join(ROOT, path)) as f:
            ds = yaml.load(f, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))['dataset']
        for key in ('node_encoder_bn', 'edge_encoder_bn'):
            assert isinstance(ds.get(key), bool), f'{path}: set dataset.{key} explicitly'


def test_encoder_batchnorm_counts_2d_parameters_each():
    """GraphGPS ZINC (d 64) has exactly its published count without encoder
    BatchNorms; each of them adds 2 d."""
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.network.model import num_parameters
    from graphgps_ext.runs.seed import build_model
    path = os.path.join('configs', 'gps', 'zinc.yaml')
    counts = []
    for opts in ([], ['dataset.node_encoder_bn', 'True'],
                 ['dataset.node_encoder_bn', 'True', 'dataset.edge_encoder_bn', 'True']):
        cfg = load_cfg(os.path.join(ROOT, path), opts)
        counts.append(num_parameters(build_model(cfg, task_for(cfg))))
    assert counts[0] == header(path)['params'][0]
    dim = 64
    assert [c - counts[0] for c in counts] == [0, 2 * dim, 4 * dim]


pytestmark = pytest.mark.usefixtures('one_thread')


def _one_step(cfg, model, task):
    from graphgps_ext.train.loss import LOSSES
    from graphgps_ext.transform import precompute_encodings
    graphs = precompute_encodings(tiny_graphs(cfg, 4), cfg, None)
    batch = Batch.from_data_list([graphs[i] for i in range(len(graphs))])
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    pred, true = model(batch)
    loss_name = cfg.model.loss_fun if cfg.model.loss_fun != 'auto' else task.loss
    loss = LOSSES[loss_name](pred, true)
    assert torch.isfinite(loss), f'loss {loss}'
    opt.zero_grad()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    opt.step()
    return float(loss.detach())


@pytest.mark.parametrize('path', CONFIGS, ids=[p[len('configs/'):-len('.yaml')]
                                               for p in CONFIGS])
def test_config_loads_without_warnings_fits_its_budget_and_trains_one_step(path):
    from graphgps_ext.config import config_warnings
    from graphgps_ext.runs.config import default_cfg, load_cfg
    from graphgps_ext.network.model import num_parameters
    from graphgps_ext.runs.seed import build_model
    cfg = load_cfg(os.path.join(ROOT, path), [])
    # A shipped config sets no key that has no effect (warned at start).
    assert config_warnings(cfg, default_cfg()) == []
    task = task_for(cfg)
    torch.manual_seed(0)
    model = build_model(cfg, task)
    n = num_parameters(model)
    model_records.check(path, model)  # the model recorded for this config
    h = header(path)
    published, expected = expected_params(h)
    budget, _ = h['budget']
    if published is not None and 'tolerance' in h:
        tol = h['tolerance'][0]
        assert abs(n - published) <= tol * published, \
            f'{path}: {n:,} parameters vs {published:,} published (> {tol:.0%} off)'
    elif published is not None:
        assert n == expected, (
            f'{path}: {n:,} parameters; published {published:,}'
            + (f' + stated differences = {expected:,}' if h['differ'] else '')
            + f' ({n - expected:+,} unexplained)')
    if budget is not None:
        limit = 1.05 * max(budget, published or 0)
        assert n <= limit, f'{path}: {n:,} parameters exceed the budget {budget:,}'
    _one_step(cfg, model, task)


def test_mna_nci1_long_is_the_paper_model_trained_to_convergence():
    """``mna/nci1-long.yaml`` is ``mna/nci1.yaml`` (the paper's protocol, 100
    epochs) with more epochs and nothing else; both headers say which is which."""
    import yaml
    paper, long = (os.path.join(ROOT, 'configs', 'mna', f) for f in ('nci1.yaml',
                                                                    'nci1-long.yaml'))
    a, b = (yaml.safe_load(open(p)) for p in (paper, long))
    assert a['optim'].pop('max_epoch') == 100 and b['optim'].pop('max_epoch') >= 200
    assert a == b
    assert "the paper's protocol of 100 epochs" in open(paper).readline()
    assert 'trained to convergence' in open(long).readline()
