r"""The edge encoder a config selects.

With ``dataset.edge_encoder: True`` the encoder ``dataset.edge_encoder_name``
(``default`` = ``task.edge_encoder``) and ``dataset.edge_encoder_bn``;
otherwise ``task.edge_encoder``. When that is ``None`` (no edge features) a
:class:`~graphgps_ext.encoder.dummy_edge.DummyEdge` is built. No edge
encoder at all is built unless a branch of ``gt.layer_type`` reads the edge
stream (its class method ``uses_edges(cfg)``: GINE, GatedGCN, GEANet with its
edge unit, GT's edge-feature layer) or ``dataset.parity_unused_edge_encoder``
(with ``edge_encoder: True``) asks for it. The pair encoder embeds the bonds
with the same selection.
"""
from typing import Optional

from torch import nn
import torch_geometric.graphgym.register as register
from torch_geometric.nn.inits import reset

from graphgps_ext.branches import layer_type_of
from graphgps_ext.encoder.tables import lookup
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize, prefix_rows


def _needs_edge_stream(cfg) -> bool:
    """Whether a branch of ``gt.layer_type`` reads the sparse edge stream: a
    branch class says so with a class method ``uses_edges(cfg) -> bool``
    (absent: it does not)."""
    layer_type = layer_type_of(cfg)
    for name in layer_type.present if layer_type is not None else ():
        cls = register.layer_dict.get(name)
        uses = getattr(cls, 'uses_edges', None)
        if uses is not None and uses(cfg):
            return True
    return False


def edge_encoder_name(cfg, task, need: Optional[bool] = None) -> Optional[str]:
    r"""The edge encoder name selected by ``cfg`` for ``task``.

    ``need``: force (``True``) a :class:`DummyEdge` when the dataset has no
    edge features; ``None`` decides from ``gt.layer_type``.
    """
    name = None
    if bool(getattr(cfg.dataset, 'edge_encoder', False)):
        name = str(cfg.dataset.edge_encoder_name)
        if name == 'default':
            name = task.edge_encoder
    else:
        name = task.edge_encoder
    if name is None:
        if need is None:
            need = _needs_edge_stream(cfg)
        name = 'DummyEdge' if need else None
    return name


def make_edge_encoder(name: str, cfg, task, dim: int) -> nn.Module:
    return lookup('edge_encoder_dict', name, 'edge').from_cfg(cfg, task, dim)


class _EdgeWithNorm(nn.Module):
    """An edge encoder followed by BatchNorm (GraphGPS ``edge_encoder_bn``)."""

    def __init__(self, enc: nn.Module, dim: int):
        super().__init__()
        self.enc, self.norm = enc, MaskedBatchNorm1d(dim)

    def reset_parameters(self):
        reset(self.enc)
        self.norm.reset_parameters()

    def forward(self, batch):
        return normalize(self.norm, self.enc(batch),
                         getattr(batch, 'edge_mask', None),
                         prefix_rows(batch, 'real_edges'))


def build_edge_encoder(cfg, task, dim: int) -> Optional[nn.Module]:
    r"""``Module(batch) -> [E, dim]``, or ``None`` when no branch reads the
    edge stream (CSA embeds bonds in its own pair encoder), unless
    ``dataset.parity_unused_edge_encoder`` asks for the configured encoder
    anyway (GraphGPS's and GEAET's code build it, unused)."""
    explicit = bool(getattr(cfg.dataset, 'edge_encoder', False))
    if not _needs_edge_stream(cfg) and not (
            explicit and cfg.dataset.parity_unused_edge_encoder):
        return None
    name = edge_encoder_name(cfg, task)
    if name is None:
        return None
    enc = make_edge_encoder(name, cfg, task, dim)
    if explicit and cfg.dataset.edge_encoder_bn:
        return _EdgeWithNorm(enc, dim)
    return enc
