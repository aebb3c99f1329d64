"""The one list of this project's config groups, and their declarations.

A group is two functions: ``cfg(cfg)`` adds the group's keys and defaults
to a config (GraphGym's ``config_dict``, registered by
:func:`graphgps_ext.register.register_all` in this order), and
``declare()`` declares their checks (:mod:`graphgps_ext.config.rules`).
The groups of the catalogues' entries (a branch's options, an encoding's
``posenc_<name>``) derive from their entries
(:mod:`graphgps_ext.config.options`); the others are modules of this
package, listed in :data:`MODULES`.

:func:`declarations` collects every group's ``declare()`` once per set of
groups (the first time a check reads them), in the order of :func:`groups`,
which is also the order in which the errors of several groups are listed.

A new group is a module of this package with both functions and one entry in
:data:`MODULES`; a new branch or encoding brings its group with its entry.
"""
from functools import lru_cache
from typing import Callable, Dict, List, NamedTuple, Tuple

from yacs.config import CfgNode

from graphgps_ext import branches, encodings
from graphgps_ext.config import dataset, gt, head, posenc, speed, train
from graphgps_ext.config.options import branch_groups, encoding_groups
from graphgps_ext.config.rules import Declarations, collect


class Group(NamedTuple):
    """A config group: its keys and defaults, and their declarations."""
    cfg: Callable[[CfgNode], None]
    declare: Callable[[], None]


#: The groups written as modules of this package: name (the key of
#: GraphGym's ``config_dict``) -> its functions, in order; the groups of the
#: catalogues' entries come after ``posenc`` (:func:`groups`).
MODULES: Dict[str, Group] = {
    'gt': Group(gt.gt_cfg, gt.declare),
    'dataset_ext': Group(dataset.dataset_cfg, dataset.declare),
    'posenc': Group(posenc.posenc_cfg, posenc.declare),
    'head': Group(head.head_cfg, head.declare),
    'train_ext': Group(train.train_cfg, train.declare),
    'speed': Group(speed.speed_cfg, speed.declare),
}
_BEFORE_ENTRIES = ('gt', 'dataset_ext', 'posenc')


def groups() -> Dict[str, Group]:
    """Every config group, in order: ``gt``, ``dataset_ext``, ``posenc``, the
    node encodings' groups and the branch groups (catalogue order),
    ``head``, ``train_ext``, ``speed`` (read at call time)."""
    out = {name: MODULES[name] for name in _BEFORE_ENTRIES}
    for name, functions in {**encoding_groups(), **branch_groups()}.items():
        if name in MODULES:
            raise ValueError(f"config group '{name}' is declared by a module and "
                             'by a catalogue entry')
        out[name] = Group(*functions)
    out.update((name, g) for name, g in MODULES.items() if name not in out)
    return out


def _key() -> Tuple:
    # The declarations are a function of the groups and of the catalogues'
    # entries (which branches read a group, which encodings are selected):
    # entries compare by identity.
    return tuple(groups().items()) + tuple(branches.CATALOGUE) + tuple(encodings.ENCODINGS)


@lru_cache(maxsize=4)
def _collected(key: Tuple) -> Tuple[Dict[str, Declarations], Declarations]:
    steps = {name: collect(group.declare, name) for name, group in groups().items()}
    return steps, sum(steps.values(), Declarations())


def declared() -> Dict[str, Declarations]:
    """``{group name: its declarations}``, in the order of :func:`groups`."""
    return dict(_collected(_key())[0])


def declarations() -> Declarations:
    """Every group's declarations, in order: the one way the checks read
    them."""
    return _collected(_key())[1]


def volatile_keys() -> List[str]:
    """The keys (or ``group.*``) declared volatile
    (:func:`~graphgps_ext.config.rules.volatile`)."""
    return list(declarations().volatile)


def resumable_keys() -> List[str]:
    """The keys declared resumable
    (:func:`~graphgps_ext.config.rules.resumable`)."""
    return list(declarations().resumable)
