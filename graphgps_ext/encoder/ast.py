r"""ogbg-code2 AST node encoder (OGB's ``ASTNodeEncoder`` example).

.. math::
    h_i = W_{\mathrm{type}}[x_{i,0}] + W_{\mathrm{attr}}[x_{i,1}]
          + W_{\mathrm{depth}}[\min(\mathrm{depth}_i, D)]

Shapes: ``batch.x`` ``[N, 2]`` long (node type, node attribute),
``batch.node_depth`` ``[N]`` or ``[N, 1]`` long -> ``[N, d]``. Sizes from
``task.extra``: ``num_nodetypes`` (98), ``num_nodeattributes`` (10030),
``max_depth`` (20) — OGB's values as defaults.
"""
from torch import Tensor, nn


class ASTNode(nn.Module):
    r"""``(x [N, 2], node_depth [N])`` -> ``[N, d]``."""

    def __init__(self, dim: int, num_nodetypes: int = 98,
                 num_nodeattributes: int = 10030, max_depth: int = 20):
        super().__init__()
        self.max_depth = max_depth
        self.type_encoder = nn.Embedding(num_nodetypes, dim)
        self.attribute_encoder = nn.Embedding(num_nodeattributes, dim)
        self.depth_encoder = nn.Embedding(max_depth + 1, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'ASTNode':
        ex = task.extra
        return cls(dim, int(ex.get('num_nodetypes', 98)),
                   int(ex.get('num_nodeattributes', 10030)),
                   int(ex.get('max_depth', 20)))

    def reset_parameters(self):
        for m in (self.type_encoder, self.attribute_encoder, self.depth_encoder):
            m.reset_parameters()

    def forward(self, batch) -> Tensor:
        x = batch.x.long()
        depth = batch.node_depth.view(-1).long().clamp(max=self.max_depth)
        return (self.type_encoder(x[:, 0]) + self.attribute_encoder(x[:, 1])
                + self.depth_encoder(depth))
