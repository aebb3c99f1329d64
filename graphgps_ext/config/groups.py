"""The one list of this project's config groups.

Each entry is a group module's two functions: ``cfg(cfg)`` adds the group's
keys and defaults to a config (GraphGym's ``config_dict``, registered by
:func:`graphgps_ext.register.register_all` in this order), and
``declare()`` declares their checks (:mod:`graphgps_ext.config.rules`).
Nothing is declared when a module is imported: :func:`declare_all` runs every
group's ``declare()`` once, in this order (which is also the order in which
the errors of several groups are listed), and every reader of the
declarations calls it first (:func:`~graphgps_ext.config.rules.declarations`).

A new group is a module of this package with both functions and one entry
here.
"""
from typing import Callable, Dict, NamedTuple

from yacs.config import CfgNode

from graphgps_ext.config import (csa, dataset, gea, gt, gtlayer, head, mna,
                                 mpnn, posenc, speed, train)
from graphgps_ext.config.rules import run_declarations


class Group(NamedTuple):
    """A config group: its keys and defaults, and their declarations."""
    cfg: Callable[[CfgNode], None]
    declare: Callable[[], None]


#: Group name (the key of GraphGym's ``config_dict``) -> its functions.
GROUPS: Dict[str, Group] = {
    'gt': Group(gt.gt_cfg, gt.declare),
    'dataset_ext': Group(dataset.dataset_cfg, dataset.declare),
    'posenc': Group(posenc.posenc_cfg, posenc.declare),
    'mpnn': Group(mpnn.mpnn_cfg, mpnn.declare),
    'gea': Group(gea.gea_cfg, gea.declare),
    'csa': Group(csa.csa_cfg, csa.declare),
    'mna': Group(mna.mna_cfg, mna.declare),
    'gtlayer': Group(gtlayer.gtlayer_cfg, gtlayer.declare),
    'head': Group(head.head_cfg, head.declare),
    'train_ext': Group(train.train_cfg, train.declare),
    'speed': Group(speed.speed_cfg, speed.declare),
}

_done = False


def declare_all() -> None:
    """Run every group's declarations, once (idempotent and thread-safe:
    :func:`~graphgps_ext.config.rules.run_declarations` runs each group's
    step once; after the first call this is one flag test)."""
    global _done
    if not _done:
        run_declarations((name, group.declare) for name, group in GROUPS.items())
        _done = True
