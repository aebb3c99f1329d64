"""A toy branch and a toy encoding, each added as a newcomer adds one: one
new module (written to a temporary folder on ``sys.path``) and one entry in
its catalogue (:data:`graphgps_ext.branches.CATALOGUE`,
:data:`graphgps_ext.encodings.ENCODINGS`). Each has one option of its own;
the tests check that its config group, checks, ``from_cfg`` and
registration follow from the entry alone."""
import torch_geometric.graphgym.register as gg

from graphgps_ext import branches, encodings, register
from graphgps_ext.branches import Branch
from graphgps_ext.encodings import Encoding
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

def toy_branch_entry() -> Branch:
    """The toy branch's catalogue entry: one option, ``toy.rounds``."""
    return Branch('Toy', 'toy_branch:Toy',
                  options=OptionGroup('toy', (
                      Option('rounds', 1, 'Rounds of attention.', min=1, max=4), )),
                  args={'n_heads': 'gt.n_heads'}, attention=True, record='toy',
                  record_layout='dense', heads_key='gt.n_heads')


def add_toy_branch(tmp_path, monkeypatch) -> str:
    """Its file and its entry (a new one each time, as a newcomer's);
    registered as the package registers its own (and unregistered when the
    test ends)."""
    (tmp_path / 'toy_branch.py').write_text(TOY_BRANCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(branches, 'CATALOGUE', branches.CATALOGUE + [toy_branch_entry()])
    monkeypatch.setitem(gg.layer_dict, 'Toy', None)
    monkeypatch.setitem(gg.config_dict, 'toy', None)
    register.register_all()
    assert gg.layer_dict['Toy'].__name__ == 'Toy'
    return 'Toy'


TOY_ENCODING = '''
"""A toy node encoding: every node's degree, clipped at ``cap``, one-hot;
its encoder maps it linearly."""
import torch
from torch import nn

from graphgps_ext import encodings


def degree_nodes(adj, memo, cap):
    """``pe_toy`` ``[G, n, cap + 1]`` of a size group."""
    degree = adj.sum(-1).clamp(max=cap).long()
    return {'pe_toy': torch.nn.functional.one_hot(degree, cap + 1).float()}


class ToyPE(nn.Module):
    def __init__(self, dim_out: int, cap: int = 4):
        super().__init__()
        self.lin = nn.Linear(cap + 1, dim_out)

    from_cfg = classmethod(encodings.from_cfg)

    def reset_parameters(self):
        self.lin.reset_parameters()

    def forward(self, batch):
        return self.lin(batch.pe_toy)
'''

def toy_encoding_entry() -> Encoding:
    """The toy encoding's catalogue entry: one option, ``posenc_Toy.cap``."""
    return Encoding('Toy', 'toy', 'toy_encoding:degree_nodes',
                    encoder='toy_encoding:ToyPE',
                    options=(Option('cap', 4, 'Degrees above it share one code.',
                                    min=1, max=64, param='cap'), ))


def add_toy_encoding(tmp_path, monkeypatch) -> str:
    """Its file and its entry (a new one each time); registered as the
    package registers its own (and unregistered when the test ends)."""
    (tmp_path / 'toy_encoding.py').write_text(TOY_ENCODING)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(encodings, 'ENCODINGS',
                        encodings.ENCODINGS + [toy_encoding_entry()])
    monkeypatch.setitem(gg.node_encoder_dict, 'Toy', None)
    monkeypatch.setitem(gg.config_dict, 'posenc_Toy', None)
    register.register_all()
    assert gg.node_encoder_dict['Toy'].__name__ == 'ToyPE'
    return 'Toy'
