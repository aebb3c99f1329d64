r"""Drawing per-node attention on graphs and node-pair maps as heat maps.

- Molecules (ZINC token ids, or OGB atom features whose column 0 is the
  atomic number minus 1) are rebuilt as RDKit molecules and drawn with
  :mod:`rdkit.Chem.Draw.rdMolDraw2D`, atoms highlighted with a colour and a
  radius growing with the score (GEAET Fig. 4/8);
- other graphs are drawn with a networkx layout, nodes coloured by the
  score;
- both in one matplotlib grid (Agg backend), where the panels of one
  :class:`Scale` share one colour range and one colour bar, so that two
  branches' panels (GEANet beside a Transformer) compare by colour;
- node-pair maps ``[channels, n, n]`` become a grid of heat maps (CSA
  Fig. 3/4).

Every picture is written as ``<stem>.png`` and ``<stem>.svg`` (in the SVG
the RDKit drawings are embedded images).
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


@dataclass(frozen=True)
class Scale:
    """A colour scale, shared by every panel of a figure that names it (one
    colour bar each): from 0 (``from_zero``, for shares such as attention
    that sums to 1 over a graph) or from the smallest value to the
    largest of all those panels."""
    label: str
    from_zero: bool = True


#: The scale of panels that name none.
SCORES = Scale('score')


@dataclass
class Panel:
    """One picture of a grid: a graph, its RDKit molecule (or ``None`` for
    the networkx drawing), per-node ``scores`` ``[n]`` (``None``: plain
    drawing) on the colour ``scale``, a title and an optional node ``mark``
    marked in blue (filled on a molecule, ringed on another graph)."""
    data: object
    mol: object
    scores: Optional[Tensor]
    title: str
    mark: Optional[int] = None
    scale: Scale = SCORES


def _colormap(cmap: str):
    """``cmap`` without its palest and darkest ends (a node of the smallest
    score stays visible on white, labels stay readable on the largest)."""
    import matplotlib
    from matplotlib.colors import ListedColormap
    import numpy as np
    return ListedColormap(matplotlib.colormaps[cmap](np.linspace(0.08, 0.85, 256)),
                          name=f'{cmap}_drawn')


def _norms(panels: Sequence[Panel]):
    """``{scale: matplotlib Normalize}`` over the scores of every panel of
    each scale."""
    from matplotlib.colors import Normalize
    values: Dict[Scale, List[Tensor]] = {}
    for p in panels:
        if p.scores is not None and p.scores.numel():
            values.setdefault(p.scale, []).append(p.scores.detach().double().cpu())
    out = {}
    for scale, vs in values.items():
        v = torch.cat(vs)
        lo = 0.0 if scale.from_zero else float(v.min())
        hi = float(v.max())
        out[scale] = Normalize(lo, hi if hi > lo else lo + 1e-12)
    return out


def _write(stem: str, png: bytes, svg: str) -> List[str]:
    atomic_write_bytes(stem + '.png', lambda f: f.write(png))
    write_text(stem + '.svg', svg)
    return [stem + '.png', stem + '.svg']


def _rdkit_image(p: Panel, norm, cmap, size: int):
    """The molecule of ``p`` drawn by RDKit (atoms coloured by score on
    ``norm``, radius growing with it; ``mark`` filled in blue), as an RGB
    array."""
    import io

    import matplotlib.image
    from rdkit.Chem.Draw import rdMolDraw2D
    d = rdMolDraw2D.MolDraw2DCairo(size, size)
    opts = d.drawOptions()
    opts.prepareMolsBeforeDrawing = False
    opts.fillHighlights = True
    try:
        mol = rdMolDraw2D.PrepareMolForDrawing(p.mol)
    except Exception:  # unsanitisable molecule: draw it as it is
        mol = p.mol
    atoms, colours, radii = [], {}, {}
    if p.scores is not None:
        s = p.scores.detach().double().cpu()
        for i, v in enumerate(s.tolist()):
            t = float(norm(v))
            atoms.append(i)
            colours[i] = tuple(float(c) for c in cmap(t)[:3])
            radii[i] = 0.2 + 0.3 * max(0.0, min(1.0, t))
    if p.mark is not None:
        if p.mark not in atoms:
            atoms.append(p.mark)
        colours[p.mark], radii[p.mark] = MARK, 0.6
    d.DrawMolecule(mol, highlightAtoms=atoms, highlightAtomColors=colours,
                   highlightAtomRadii=radii, highlightBonds=[])
    d.FinishDrawing()
    return matplotlib.image.imread(io.BytesIO(d.GetDrawingText()), format='png')


def _layout(data) -> Dict[int, tuple]:
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from(data.edge_index.t().tolist())
    try:
        return nx.kamada_kawai_layout(g)
    except Exception:  # disconnected / degenerate graphs
        return nx.spring_layout(g, seed=0)


def _draw_networkx(ax, p: Panel, pos, norm, cmap):
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(range(p.data.num_nodes))
    g.add_edges_from(p.data.edge_index.t().tolist())
    nx.draw_networkx_edges(g, pos, ax=ax, edge_color='0.6')
    if p.scores is None:
        nx.draw_networkx_nodes(g, pos, ax=ax, node_size=60, node_color='0.75')
    else:
        nx.draw_networkx_nodes(g, pos, ax=ax, node_size=60,
                               node_color=p.scores.detach().double().cpu().numpy(),
                               cmap=cmap, vmin=norm.vmin, vmax=norm.vmax)
    if p.mark is not None:
        nx.draw_networkx_nodes(g, pos, nodelist=[p.mark], ax=ax, node_size=140,
                               node_color='none', edgecolors=[MARK], linewidths=2)


def draw_grid(rows: List[List[Panel]], stem: str, cmap: str = CMAP,
              size: float = 2.8) -> List[str]:
    """Rows x columns of graphs with nodes coloured by score: a molecule by
    RDKit (atoms coloured, radius growing with the score), another graph in
    a networkx layout (one layout per graph, shared by its panels). Every
    panel of a :class:`Scale` is coloured on the same range, shown by one
    colour bar labelled with the scale; titles are wrapped to the panel."""
    import textwrap

    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    colours = _colormap(cmap)
    panels = [p for row in rows for p in row]
    norms = _norms(panels)
    ncol = max(len(r) for r in rows)
    fig = plt.figure(figsize=(size * ncol + 1.2 * len(norms), size * len(rows) + 0.3),
                     layout='constrained')
    axes = fig.subplots(len(rows), ncol, squeeze=False)
    layouts: Dict[int, Dict[int, tuple]] = {}
    by_scale: Dict[Scale, list] = {}
    for r, row in enumerate(rows):
        for c in range(ncol):
            ax = axes[r][c]
            ax.set_axis_off()
            if c >= len(row):
                continue
            p = row[c]
            norm = norms.get(p.scale)
            if p.mol is not None:
                ax.imshow(_rdkit_image(p, norm, colours, int(size * 110)))
            else:
                if id(p.data) not in layouts:
                    layouts[id(p.data)] = _layout(p.data)
                _draw_networkx(ax, p, layouts[id(p.data)], norm, colours)
            ax.set_title(textwrap.fill(p.title, 30), fontsize=9)
            if p.scores is not None:
                by_scale.setdefault(p.scale, []).append(ax)
    for scale, axs in by_scale.items():
        bar = fig.colorbar(ScalarMappable(norm=norms[scale], cmap=colours), ax=axs,
                           shrink=0.9 if len(axs) > 1 else 0.8, aspect=25, pad=0.02)
        bar.set_label(textwrap.fill(scale.label, 40), fontsize=8)
        bar.ax.tick_params(labelsize=7)
    return _save_fig(fig, stem)


def _save_fig(fig, stem: str) -> List[str]:
    import matplotlib.pyplot as plt
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    fig.savefig(stem + '.png', dpi=110)
    fig.savefig(stem + '.svg')
    plt.close(fig)
    return [stem + '.png', stem + '.svg']


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
