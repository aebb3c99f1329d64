"""``python -m graphgps_ext.viz`` on tiny checkpoints trained by ``main.py``,
and the drawing helpers (RDKit molecules, networkx fallback)."""
import os
import shutil
import sys

import pytest
import torch
from torch_geometric.data import Data

from graphgps_ext.viz.draw import Panel, ZINC_ATOMS, draw_grid, to_molecule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _train(data_root, out, name, layer_type):
    sys.path.insert(0, ROOT)
    import main
    rc = main.main(['--cfg', os.path.join(out, 'base.yaml'), 'run_name', name,
                    'gt.layer_type', layer_type])
    assert rc == 0
    return os.path.join(out, name, '0')


def _check(paths):
    assert paths
    for p in paths:
        assert os.path.getsize(p) > 1000, p
        with open(p, 'rb') as f:
            head = f.read(200)
        assert head.startswith(b'\x89PNG') if p.endswith('.png') else b'<svg' in head or b'<?xml' in head


def test_command_draws_trained_runs(sample_data, tmp_path, capsys):
    data = sample_data('ZINC')
    out = str(tmp_path / 'results')
    os.makedirs(out)
    with open(os.path.join(out, 'base.yaml'), 'w') as f:
        f.write(f"""out_dir: {out}
accelerator: cpu
dataset: {{format: PyG-ZINC, name: subset, dir: {data}, max_graphs: 36}}
train: {{batch_size: 16, eval_period: 1}}
model: {{type: GPSModel}}
gt: {{layers: 1, dim_hidden: 16, n_heads: 2}}
optim: {{max_epoch: 1, scheduler: cosine_with_warmup, num_warmup_epochs: 2}}
posenc: {{progress: False}}
""")
    gea = _train(data, out, 'gea', 'GINE+None+GEANet')
    csa = _train(data, out, 'csa', 'None+CSA+None')
    assert 'never leaves the linear warm-up' in capsys.readouterr().out  # training warns
    from graphgps_ext.viz.cli import main
    figs = str(tmp_path / 'figs')
    rc = main(['--run', gea, '--compare', csa, '--graphs', '0,2', '--out', figs,
               '--csa-nodes', '1', '--channels', '0,3,5'])
    assert rc == 0
    printed = capsys.readouterr()
    assert 'warm-up' not in printed.out + printed.err  # a training warning: not repeated
    paths = [ln for ln in printed.out.splitlines()
             if ln.endswith(('.png', '.svg'))]
    names = {os.path.basename(p) for p in paths}
    assert {'attention_nodes.png', 'attention_nodes.svg', 'csa_csa_0_g0.png',
            'csa_csa_0_g2.svg', 'csa_csa_0_g0_rows.png'} <= names
    _check(paths)
    # errors name what to change
    assert main(['--run', gea, '--graphs', '5000', '--out', figs]) == 2
    assert 'out of range' in capsys.readouterr().err
    assert main(['--run', str(tmp_path), '--graphs', '0', '--out', figs]) == 2
    assert 'config.yaml' in capsys.readouterr().err
    # a crafted best.pt is refused unread (exit 6), never unpickled
    crafted = str(tmp_path / 'crafted' / '0')
    shutil.copytree(gea, crafted)
    marker = tmp_path / 'created-by-unpickling'

    class CreatesFile:
        def __reduce__(self):
            return open, (str(marker), 'w')

    torch.save({'model': CreatesFile(), 'epoch': 0}, os.path.join(crafted, 'ckpt', 'best.pt'))
    assert main(['--run', crafted, '--graphs', '0', '--out', figs]) == 6
    assert 'refused to load' in capsys.readouterr().err and not marker.exists()


def test_zinc_and_ogb_molecules():
    # ZINC ids: C(=O)[O-] and a charged N; OGB: benzene, aromatic bonds.
    x = torch.tensor([[0], [1], [7], [10]])
    ei = torch.tensor([[0, 1, 0, 2, 0, 3], [1, 0, 2, 0, 3, 0]])
    mol = to_molecule(Data(x=x, edge_index=ei, edge_attr=torch.tensor([2, 2, 1, 1, 1, 1])), 'zinc')
    assert [a.GetSymbol() for a in mol.GetAtoms()] == ['C', 'O', 'O', 'N']
    assert mol.GetAtomWithIdx(2).GetFormalCharge() == -1 and ZINC_ATOMS[10] == 'N H3 +'
    assert str(mol.GetBondBetweenAtoms(0, 1).GetBondType()) == 'DOUBLE'
    ring = torch.arange(6)
    ei = torch.stack([torch.cat([ring, (ring + 1) % 6]), torch.cat([(ring + 1) % 6, ring])])
    benz = Data(x=torch.full((6, 9), 0).index_fill_(1, torch.tensor([0]), 5),
                edge_index=ei, edge_attr=torch.full((12, 3), 0).index_fill_(1, torch.tensor([0]), 3))
    from rdkit import Chem
    assert Chem.MolToSmiles(to_molecule(benz, 'ogb')) == 'c1ccccc1'


def test_networkx_fallback(tmp_path):
    g = Data(edge_index=torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]), num_nodes=4)
    rows = [[Panel(g, None, None, 'graph'),
             Panel(g, None, torch.tensor([0.1, 0.2, 0.3, 0.4]), 'scores', mark=1)]]
    _check(draw_grid(rows, str(tmp_path / 'nx')))


def test_the_maps_drawn_follow_the_record_layouts_of_the_catalogue():
    from graphgps_ext.viz.cli import map_kind
    assert {b: map_kind(b) for b in ('GEANet', 'Transformer', 'GT', 'CSA', 'MNA')} == {
        'GEANet': None, 'Transformer': None, 'GT': None, 'CSA': 'channel', 'MNA': None}
    assert {b: map_kind(b, head_maps=True) for b in ('Transformer', 'GT', 'MNA')} == {
        'Transformer': 'head', 'GT': 'head', 'MNA': None}


def test_panels_of_one_scale_share_its_range(tmp_path):
    from graphgps_ext.viz.draw import Scale, _norms
    g = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    share = Scale('share')
    kernels = Scale('kernel weight', from_zero=False)
    panels = [Panel(g, None, torch.tensor([0.2, 0.8]), 'a', scale=share),
              Panel(g, None, torch.tensor([0.4, 0.6]), 'b', scale=share),
              Panel(g, None, torch.tensor([0.3, 0.35]), 'c', scale=kernels),
              Panel(g, None, None, 'plain')]
    norms = _norms(panels)
    assert set(norms) == {share, kernels}
    assert (norms[share].vmin, norms[share].vmax) == pytest.approx((0.0, 0.8))  # both panels
    assert (norms[kernels].vmin, norms[kernels].vmax) == pytest.approx((0.3, 0.35))
    # One colour bar per scale, drawn beside its panels.
    _check(draw_grid([panels[:2], panels[2:]], str(tmp_path / 'scales')))
