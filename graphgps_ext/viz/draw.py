r"""Drawing per-node attention on graphs and node-pair maps as heat maps.

- Molecules (ZINC token ids, or OGB atom features whose column 0 is the
  atomic number minus 1) are rebuilt as RDKit molecules and drawn with
  :mod:`rdkit.Chem.Draw.rdMolDraw2D`, atoms highlighted with a colour and a
  radius growing with the score (GEAET Fig. 4/8);
- other graphs are drawn with a networkx layout (matplotlib, Agg backend),
  nodes coloured by the score;
- node-pair maps ``[channels, n, n]`` become a grid of heat maps (CSA
  Fig. 3/4).

Every picture is written as ``<stem>.png`` and ``<stem>.svg``.
"""
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch
from torch import Tensor

from graphgps_ext.files import atomic_write_bytes, write_text

#: ZINC-12k atom vocabulary (benchmarking-gnns ``atom_dict.pickle``,
#: ``idx2word``): ``symbol[ H<n>][ +|-]``.
ZINC_ATOMS = ['C', 'O', 'N', 'F', 'C H1', 'S', 'Cl', 'O -', 'N H1 +', 'Br',
              'N H3 +', 'N H2 +', 'N +', 'N -', 'S -', 'I', 'P', 'O H1 +',
              'N H1 -', 'O +', 'S +', 'P H1', 'P H2', 'C H2 -', 'P +',
              'S H1 +', 'C H1 -', 'P H1 +']
#: ZINC bond ids (``bond_dict.pickle``): 1 single, 2 double, 3 triple.
ZINC_BONDS = {1: 'SINGLE', 2: 'DOUBLE', 3: 'TRIPLE'}
#: OGB bond feature column 0 (``ogb.utils.features``).
OGB_BONDS = {0: 'SINGLE', 1: 'DOUBLE', 2: 'TRIPLE', 3: 'AROMATIC'}

CMAP = 'Reds'
MARK = (0.15, 0.35, 0.95)  # the receiving node of a CSA row (blue ring)


def molecule_kind(cfg, task) -> Optional[str]:
    """``'zinc'``, ``'ogb'`` or ``None`` (not a molecule dataset we can
    decode): ZINC by ``dataset.format``, OGB molecules by their ``Atom``
    encoder (categorical atom features, column 0 = atomic number - 1)."""
    if cfg.dataset.format == 'PyG-ZINC':
        return 'zinc'
    if getattr(task, 'node_encoder', None) == 'Atom':
        return 'ogb'
    return None


def _atom(token: str):
    from rdkit import Chem
    parts = token.split()
    atom = Chem.Atom(parts[0])
    for p in parts[1:]:
        if p.startswith('H'):
            atom.SetNumExplicitHs(int(p[1:]))
        elif p in ('+', '-'):
            atom.SetFormalCharge(1 if p == '+' else -1)
    return atom


def to_molecule(data, kind: str):
    """An RDKit ``Mol`` with 2D coordinates for a ZINC / OGB molecule graph
    (atom ``i`` = node ``i``), or ``None`` if it cannot be decoded. Molecules
    that RDKit cannot sanitise are kept unsanitised (drawing only)."""
    from rdkit import Chem
    from rdkit.Chem import rdDepictor
    x = data.x.view(data.num_nodes, -1).long()
    mol = Chem.RWMol()
    for i in range(data.num_nodes):
        if kind == 'zinc':
            t = int(x[i, 0])
            if not 0 <= t < len(ZINC_ATOMS):
                return None
            mol.AddAtom(_atom(ZINC_ATOMS[t]))
        else:
            mol.AddAtom(Chem.Atom(int(x[i, 0]) + 1))
    ea = getattr(data, 'edge_attr', None)
    bonds = ZINC_BONDS if kind == 'zinc' else OGB_BONDS
    src, dst = data.edge_index
    for e in range(src.numel()):
        u, v = int(src[e]), int(dst[e])
        if u >= v or mol.GetBondBetweenAtoms(u, v) is not None:
            continue
        t = 1 if kind == 'zinc' else 0
        if ea is not None:
            t = int(ea.view(src.numel(), -1)[e, 0])
        name = bonds.get(t, 'SINGLE')
        mol.AddBond(u, v, getattr(Chem.BondType, name))
        if name == 'AROMATIC':
            mol.GetAtomWithIdx(u).SetIsAromatic(True)
            mol.GetAtomWithIdx(v).SetIsAromatic(True)
    mol = mol.GetMol()
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # RDKit raises several types; draw it unsanitised
        mol.UpdatePropertyCache(strict=False)
    rdDepictor.Compute2DCoords(mol)
    return mol


@dataclass
class Panel:
    """One picture of a grid: a graph, its RDKit molecule (or ``None`` for
    the networkx drawing), per-node ``scores`` ``[n]`` (``None``: plain
    drawing), a title and an optional node ``mark`` ringed in blue."""
    data: object
    mol: object
    scores: Optional[Tensor]
    title: str
    mark: Optional[int] = None


def _colours(scores: Tensor, cmap: str):
    """Colours and ``[0, 1]`` intensities: the panel's minimum -> 0 (light),
    its maximum -> 1 (dark)."""
    import matplotlib
    s = scores.detach().double().cpu()
    span = float(s.max() - s.min()) if s.numel() else 0.0
    s = (s - s.min()) / span if span > 0 else torch.zeros_like(s)
    cm = matplotlib.colormaps[cmap]
    return [tuple(float(c) for c in cm(0.05 + 0.8 * float(v))[:3]) for v in s], s


def _write(stem: str, png: bytes, svg: str) -> List[str]:
    atomic_write_bytes(stem + '.png', lambda f: f.write(png))
    write_text(stem + '.svg', svg)
    return [stem + '.png', stem + '.svg']


def _legend(p: Panel) -> str:
    if p.scores is None:
        return p.title
    return (f'{p.title} ({float(p.scores.min()):.2g}'
            f'-{float(p.scores.max()):.2g})')


def draw_rdkit_grid(rows: List[List[Panel]], stem: str, cmap: str = CMAP,
                    size: int = 300) -> List[str]:
    """Molecules with atoms coloured by score, rows x columns, via RDKit:
    light = the panel's smallest score, dark and larger = its largest (the
    legend gives both)."""
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D
    ncol = max(len(r) for r in rows)
    mols, atoms, colours, radii, legends = [], [], [], [], []
    for row in rows:
        for p in row + [None] * (ncol - len(row)):
            if p is None:
                mols.append(Chem.Mol())
                atoms.append([]), colours.append({}), radii.append({})
                legends.append('')
                continue
            mols.append(p.mol)
            legends.append(_legend(p))
            if p.scores is None:
                atoms.append([]), colours.append({}), radii.append({})
                continue
            cols, norm = _colours(p.scores, cmap)
            idx = list(range(len(cols)))
            col = dict(zip(idx, cols))
            rad = {i: 0.2 + 0.3 * float(norm[i]) for i in idx}
            if p.mark is not None:
                col[p.mark], rad[p.mark] = MARK, 0.6
            atoms.append(idx), colours.append(col), radii.append(rad)
    out = []
    for drawer in (rdMolDraw2D.MolDraw2DCairo, rdMolDraw2D.MolDraw2DSVG):
        d = drawer(ncol * size, len(rows) * size, size, size)
        opts = d.drawOptions()
        opts.legendFontSize = 14
        opts.prepareMolsBeforeDrawing = False
        opts.fillHighlights = True
        prepared = []
        for m in mols:
            try:
                prepared.append(rdMolDraw2D.PrepareMolForDrawing(m))
            except Exception:  # unsanitisable molecule: draw it as it is
                prepared.append(m)
        d.DrawMolecules(prepared, highlightAtoms=atoms,
                        highlightAtomColors=colours, highlightAtomRadii=radii,
                        highlightBonds=[[] for _ in mols], legends=legends)
        d.FinishDrawing()
        out.append(d.GetDrawingText())
    return _write(stem, out[0], out[1])


def _layout(data) -> Dict[int, tuple]:
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from(data.edge_index.t().tolist())
    try:
        return nx.kamada_kawai_layout(g)
    except Exception:  # disconnected / degenerate graphs
        return nx.spring_layout(g, seed=0)


def draw_networkx_grid(rows: List[List[Panel]], stem: str, cmap: str = CMAP,
                       size: float = 3.2) -> List[str]:
    """Graphs in a networkx layout (one layout per graph, shared by its
    panels), nodes coloured by score with a colour bar per panel."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import networkx as nx
    ncol = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), ncol, squeeze=False,
                             figsize=(size * ncol, size * len(rows)))
    layouts = {}
    for r, row in enumerate(rows):
        for c in range(ncol):
            ax = axes[r][c]
            ax.set_axis_off()
            if c >= len(row):
                continue
            p = row[c]
            key = id(p.data)
            if key not in layouts:
                layouts[key] = _layout(p.data)
            pos = layouts[key]
            g = nx.Graph()
            g.add_nodes_from(range(p.data.num_nodes))
            g.add_edges_from(p.data.edge_index.t().tolist())
            nx.draw_networkx_edges(g, pos, ax=ax, edge_color='0.6')
            if p.scores is None:
                nx.draw_networkx_nodes(g, pos, ax=ax, node_size=60,
                                       node_color='0.75')
            else:
                s = p.scores.detach().double().cpu().numpy()
                nodes = nx.draw_networkx_nodes(
                    g, pos, ax=ax, node_size=60, node_color=s, cmap=cmap,
                    vmin=0.0, vmax=max(float(s.max()), 1e-12))
                fig.colorbar(nodes, ax=ax, fraction=0.046, pad=0.02)
            if p.mark is not None:
                nx.draw_networkx_nodes(g, pos, nodelist=[p.mark], ax=ax,
                                       node_size=140, node_color='none',
                                       edgecolors=[MARK], linewidths=2)
            ax.set_title(p.title, fontsize=9)
    fig.tight_layout()
    return _save_fig(fig, stem)


def _save_fig(fig, stem: str) -> List[str]:
    import matplotlib.pyplot as plt
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    fig.savefig(stem + '.png', dpi=110)
    fig.savefig(stem + '.svg')
    plt.close(fig)
    return [stem + '.png', stem + '.svg']


def draw_grid(rows: List[List[Panel]], stem: str, cmap: str = CMAP) -> List[str]:
    """RDKit when every panel has a molecule, networkx otherwise."""
    if all(p.mol is not None for row in rows for p in row):
        return draw_rdkit_grid(rows, stem, cmap)
    return draw_networkx_grid(rows, stem, cmap)


def draw_heatmaps(maps: Tensor, stem: str, titles: Sequence[str],
                  suptitle: str = '', labels: Optional[Sequence[str]] = None,
                  cmap: str = 'viridis', ncol: int = 4) -> List[str]:
    """A grid of ``[channels, n, n]`` heat maps (row = query/receiving node
    ``i``, column = key node ``j``), one colour scale per map. ``labels``:
    tick labels of the nodes (e.g. atom symbols)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    k = maps.size(0)
    ncol = max(1, min(ncol, k))
    nrow = (k + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, squeeze=False,
                             figsize=(2.9 * ncol, 2.7 * nrow + 0.4))
    n = maps.size(-1)
    for idx, ax in enumerate(axes.flat):
        if idx >= k:
            ax.set_axis_off()
            continue
        im = ax.imshow(maps[idx].detach().float().cpu().numpy(), cmap=cmap,
                       vmin=0.0, interpolation='nearest')
        ax.set_title(titles[idx], fontsize=9)
        if labels is not None and n <= 40:
            ax.set_xticks(range(n), labels, fontsize=4, rotation=90)
            ax.set_yticks(range(n), labels, fontsize=4)
        else:
            ax.set_xticks([]), ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return _save_fig(fig, stem)


def atom_labels(mol) -> Optional[List[str]]:
    """``['C0', 'N1', ...]`` for the heat-map ticks, or ``None``."""
    if mol is None:
        return None
    return [f'{a.GetSymbol()}{a.GetIdx()}' for a in mol.GetAtoms()]


def selected_channels(num: int, channels: Optional[Sequence[int]] = None,
                      limit: int = 16) -> List[int]:
    """``channels`` (checked), else all when ``num <= limit``, else ``limit``
    evenly spaced ones."""
    if channels:
        bad = [c for c in channels if not 0 <= c < num]
        if bad:
            raise ValueError(f'channels {bad} out of range: the map has {num} '
                             f'channels (0..{num - 1})')
        return list(channels)
    if num <= limit:
        return list(range(num))
    return torch.linspace(0, num - 1, limit).round().long().tolist()
