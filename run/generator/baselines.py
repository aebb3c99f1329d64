"""The framework's own MPNN baselines: models no paper table lists, kept to
show that an MPNN through this framework is as strong as its standard
implementation."""
from .common import NCI1, Config, Registry, data, head, merge, optim, stack, train


def build(reg: Registry):
    # GIN (Xu et al., ICLR 2019) as PyG's GIN example: 5 GIN layers of width
    # 64 with the GIN paper's MLP (Linear-BN-ReLU-Linear) and a ReLU after
    # each, no residual and no norm around the layer, sum pooling, an MLP
    # readout (Linear-ReLU-Dropout 0.5-Linear); Adam lr 1e-3, batch 32, 100
    # epochs; NCI1's random 8:1:1 split per seed (as MNA-GT Table 2).
    cfg = merge({'dataset': data(*NCI1[:3], split=[0.8, 0.1, 0.1])},
                stack('GIN+None+None', layers=5, dim=64, dropout=0.0, norm='none',
                      ffn=False, residual=False),
                {'mpnn': {'gin_mlp': 'gin', 'out_act': True, 'act': 'relu'}},
                head(layers=2, pool='add', width='constant', dropout=0.5),
                train(batch=32),
                optim(lr=1e-3, epochs=100, wd=0.0, scheduler='none', clip=False,
                      optimizer='adam'))
    reg.add(Config('gin/nci1.yaml', 'GIN on NCI1 (an MPNN baseline of the framework)', cfg,
                   None, 'not published', None, 'none stated',
                   notes=['GIN (Xu et al. 2019) as PyG\'s GIN example: 5 layers, width 64, the '
                          'GIN paper\'s MLP (mpnn.gin_mlp gin: Linear-BN-ReLU-Linear), ReLU '
                          'after every layer (mpnn.out_act), no residual and no layer norm, '
                          'sum pooling, MLP readout with dropout 0.5; Adam lr 1e-3, batch 32, '
                          '100 epochs; random 8:1:1 split per seed',
                          'a linear node encoder (37 -> 64) in front of the first layer, '
                          'where PyG\'s example feeds the one-hot atom types to it directly']))
