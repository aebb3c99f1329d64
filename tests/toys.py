"""A toy branch and a toy encoding, each added as a newcomer adds one: one
new module (written to a temporary folder on ``sys.path``) and one entry in
its catalogue (:data:`graphgps_ext.branches.CATALOGUE`,
:data:`graphgps_ext.encodings.ENCODINGS`). Each has one option of its own;
the tests check that its config group, checks, ``from_cfg`` and
registration follow from the entry alone."""
import torch_geometric.graphgym.register as gg

from graphgps_ext import branches, register
from graphgps_ext.branches import Branch
from graphgps_ext.options import Option, OptionGroup

TOY_BRANCH = '''
"""A toy global branch: ``rounds`` rounds of one-head softmax attention
inside each graph."""
import torch
from torch import nn

from graphgps_ext import branches
from graphgps_ext.branches import HeadsError


class Toy(nn.Module):
    def __init__(self, dim: int, n_heads: int = 1, rounds: int = 1):
        super().__init__()
        if dim % n_heads:
            raise HeadsError(f'Toy: width {dim} is not divisible by {n_heads} heads',
                             dim, n_heads)
        self.heads, self.rounds = n_heads, rounds
        self.qk = nn.Linear(dim, 2 * dim)

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        self.qk.reset_parameters()

    def forward(self, x, edge_attr, ctx):
        layout = ctx.layout
        h = layout.to_dense(x)
        for _ in range(self.rounds):
            q, k = self.qk(h).chunk(2, dim=-1)
            score = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
            score = score.masked_fill(~layout.mask[:, None, :], float('-inf'))
            attn = score.softmax(dim=-1) * layout.mask[:, :, None]
            h = attn @ h
        ctx.log('toy', attn.unsqueeze(1).expand(-1, self.heads, -1, -1))
        return layout.to_sparse(h), None
'''

#: The toy branch's catalogue entry: one option, ``toy.rounds``.
TOY_ENTRY = Branch(
    'Toy', 'toy_branch:Toy',
    options=OptionGroup('toy', (
        Option('rounds', 1, 'Rounds of attention.', min=1, max=4), )),
    args={'n_heads': 'gt.n_heads'}, attention=True, record='toy',
    record_layout='dense', heads_key='gt.n_heads')


def add_toy_branch(tmp_path, monkeypatch) -> str:
    """Its file and its entry; registered as the package registers its own
    (and unregistered when the test ends)."""
    (tmp_path / 'toy_branch.py').write_text(TOY_BRANCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(branches, 'CATALOGUE', branches.CATALOGUE + [TOY_ENTRY])
    monkeypatch.setitem(gg.layer_dict, 'Toy', None)
    monkeypatch.setitem(gg.config_dict, 'toy', None)
    register.register_all()
    assert gg.layer_dict['Toy'].__name__ == 'Toy'
    return 'Toy'
