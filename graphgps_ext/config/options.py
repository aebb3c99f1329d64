"""Config groups derived from the options of the catalogues' entries
(:mod:`graphgps_ext.options`): a branch's group (:mod:`graphgps_ext.branches`)
and a node encoding's ``posenc_<name>`` (:mod:`graphgps_ext.encodings`).

From an entry's :class:`~graphgps_ext.options.OptionGroup` come its keys
and defaults (the group itself is GraphGym's group function) and its
``declare()``: the choices and ranges of its options, the options that have
no effect while a sibling they need has another value, the options that
have no effect without the entry (a branch absent from ``gt.layer_type``, an
encoding not selected; in a file only a warning, so that one file serves its
ablations) and the entry's own cross-option rules.
"""
from functools import lru_cache
from typing import Callable, Dict, Tuple

from graphgps_ext import branches, encodings
from graphgps_ext.config.posenc import pe_selected
from graphgps_ext.config.rules import (at_most, bounded, choices, has_branch, ignored,
                                       non_negative, positive, rule)
from graphgps_ext.options import Option, OptionGroup, get

GroupFunctions = Tuple[Callable, Callable[[], None]]


def _show(value) -> str:
    return str(value) if isinstance(value, (bool, int, float)) else repr(value)


def declare_values(group: OptionGroup) -> None:
    """Declare the choices and ranges of the options of ``group``."""
    for opt in group.options:
        if opt.choices:
            choices(group.key(opt), opt.choices)
    for opt in group.options:
        key = group.key(opt)
        if opt.min == 0:
            non_negative(key)
        elif opt.min == 1 and isinstance(opt.default, int):
            positive(key)
        elif opt.min is not None:
            bounded(key, lambda v, m=opt.min: v >= m, f'>= {opt.min}')
        if opt.max is not None:
            at_most(opt.max, key)


def _needs(group: OptionGroup, opt: Option) -> dict:
    def why(cfg):
        unmet = group.unmet(cfg, opt)
        text = ' and '.join(f'{k} is {_show(get(cfg, k))}' for k in unmet)
        return text + (f' ({opt.because})' if opt.because else '')

    def fix(cfg):
        unmet = {k: v for k, v in group.unmet(cfg, opt).items() if not callable(v)}
        return ('set ' + ' and '.join(f'{k} {_show(v)}' for k, v in unmet.items())
                if unmet else '')

    used = None
    if opt.used is not None:
        def used(cfg):
            return group.value(cfg, opt)
    return dict(unless=lambda cfg: not group.unmet(cfg, opt), why=why, fix=fix,
                used=used, in_file=opt.in_file)


def declare_needs(group: OptionGroup) -> None:
    """Declare the options of ``group`` that have no effect while a need is
    not met (after the whole group's declaration: each key is reported
    once)."""
    for opt in group.options:
        if opt.needs:
            ignored(group.key(opt), **_needs(group, opt))


def _only(names: Tuple[str, ...]) -> dict:
    """An option read only by the branches ``names``."""
    return dict(unless=lambda cfg: has_branch(cfg, *names),
                why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no "
                                f"{' / '.join(names)} branch",
                in_file='warn')


@lru_cache(maxsize=None)
def branch_group(group: OptionGroup) -> GroupFunctions:
    """The group functions of a branch group: ``(add keys, declare)``."""
    def declare():
        entries = [b for b in branches.CATALOGUE if b.options is group]
        declare_values(group)
        for entry in entries:
            for check in entry.rules:
                rule(_when_present(entry.name, check))
        ignored(f'{group.name}.*', **_only(tuple(b.name for b in entries)))
        for opt in group.options:
            if opt.readers:
                ignored(group.key(opt), **_only(opt.readers))
        declare_needs(group)
    declare.__qualname__ = f'declare_{group.name}'
    return group, declare


def _when_present(name: str, check):
    return _when(lambda cfg: has_branch(cfg, name), check)


def branch_groups() -> Dict[str, GroupFunctions]:
    """``{group: (add keys, declare)}`` of the branch catalogue, in its
    order (a group shared by several branches once)."""
    out: Dict[str, GroupFunctions] = {}
    for entry in branches.CATALOGUE:
        group = entry.options
        if group is None:
            continue
        if group.name in out and out[group.name][0] is not group:
            raise ValueError(f"branch '{entry.name}': config group '{group.name}' "
                             'is declared by another entry with other options')
        out[group.name] = branch_group(group)
    return out


@lru_cache(maxsize=None)
def encoding_group(entry: encodings.Encoding) -> GroupFunctions:
    """The group functions of a node encoding's ``posenc_<name>``."""
    group = entry.group
    selected = pe_selected(entry.name)

    def declare():
        declare_values(group)
        for check in entry.rules:
            rule(_when(selected, check))
        ignored(f'{group.name}.enable', unless=selected,
                why=lambda cfg: "dataset.node_encoder is True, so the PEs are those "
                                "named in dataset.node_encoder_name "
                                f"'{cfg.dataset.node_encoder_name}'")
        ignored(f'{group.name}.*', unless=selected,
                why=(f'{entry.name} is not selected: add it to '
                     'dataset.node_encoder_name (dataset.node_encoder True) or set '
                     f'{group.name}.enable True'), in_file='warn')
        declare_needs(group)
    declare.__qualname__ = f'declare_{group.name}'
    return group, declare


def _when(selected, check):
    def run(cfg):
        return check(cfg) if selected(cfg) else None
    run.__qualname__ = getattr(check, '__qualname__', 'rule')
    return run


def encoding_groups() -> Dict[str, GroupFunctions]:
    """``{posenc_<name>: (add keys, declare)}`` of the node encodings of the
    encoding catalogue, in its order."""
    return {e.group.name: encoding_group(e)
            for e in encodings.node_encodings().values()}
