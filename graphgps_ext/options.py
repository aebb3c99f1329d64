r"""Options declared once: the name, default, range or choices and help of
a config key, and the constructor argument it sets.

A catalogue entry (a branch of :mod:`graphgps_ext.branches`, an encoding of
:mod:`graphgps_ext.encodings`) carries its options as an
:class:`OptionGroup`: the config group ``cfg.<group>`` with its defaults
(:meth:`OptionGroup.__call__`), its checks (choices with did-you-mean,
ranges, the keys that have no effect: :mod:`graphgps_ext.config.options`)
and the keyword arguments of the class the entry builds
(:meth:`OptionGroup.arguments`) all derive from it, so that a default, a
range or a reading of the config is written once.

An option has no effect while a sibling it :attr:`Option.needs` has another
value (``gea.shared_width`` needs ``gea.shared_unit True``): the config check
refuses it then, and the class gets the value the run uses instead
(:attr:`Option.used`, else the default).

Plain Python on the package's ground floor (yacs for the groups).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

#: Marks a constructor argument that takes the width the class is built
#: with (``from_cfg(cfg, ..., dim)``'s ``dim``).
WIDTH = object()

_MISSING = object()


def get(cfg, key: str, default=_MISSING):
    """The value of the dotted ``key`` of ``cfg`` (``KeyError`` without a
    ``default``)."""
    node = cfg
    for part in key.split('.'):
        if not isinstance(node, dict) or part not in node:
            if default is _MISSING:
                raise KeyError(key)
            return default
        node = node[part]
    return node


@dataclass(frozen=True)
class Above:
    """A :attr:`Option.needs` test: the key is above ``limit``."""
    limit: float

    def __call__(self, value) -> bool:
        return value > self.limit


@dataclass(frozen=True, eq=False)
class Option:
    """One config key of a group.

    Attributes:
        name: the key inside its group (``'hops'``; ``'eigen.max_freqs'``
            in a sub-group).
        default: its default (its type is the key's type).
        help: what it does (one or two sentences; the docs' tables say the
            same).
        choices: the values it takes (a bad one gets the closest valid ones).
        min, max: the inclusive range of a number (``max`` bounds sizes and
            counts so that a mistyped value is refused at start).
        arg: the constructor argument it sets (default: the last part of
            ``name``; ``None``: it sets none).
        to_arg: the argument from the value (default: the value itself).
        param: the name under which it enters what an encoding precomputes
            (the cache key), or ``None``.
        needs: ``{key: value}`` under which it has an effect: a sibling
            option's name (or an absolute dotted key) and the value it must
            have (or a test such as :class:`Above`).
        because: why it has no effect otherwise (added to the message).
        used: ``used(cfg, dim)``: the value the run uses while a need is not
            met (default: the default).
        in_file: ``'warn'``: a config file that sets it while a need is not
            met only gets a warning (``'error'``: refused).
        readers: the branches (of a group shared by several) that read it;
            empty: every branch of the group.
    """
    name: str
    default: Any
    help: str
    choices: Tuple = ()
    min: Optional[float] = None
    max: Optional[float] = None
    arg: Optional[str] = ''
    to_arg: Optional[Callable[[Any], Any]] = None
    param: Optional[str] = None
    needs: Mapping[str, Any] = field(default_factory=dict)
    because: str = ''
    used: Optional[Callable[[Any, int], Any]] = None
    in_file: str = 'error'
    readers: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.choices and self.default not in self.choices:
            raise ValueError(f"option '{self.name}': default {self.default!r} is not "
                             f'one of its choices {self.choices}')
        if isinstance(self.default, (int, float)) and not isinstance(self.default, bool):
            low = self.min is not None and self.default < self.min
            if low or (self.max is not None and self.default > self.max):
                raise ValueError(f"option '{self.name}': default {self.default} is "
                                 f'outside [{self.min}, {self.max}]')
        if self.in_file not in ('error', 'warn'):
            raise ValueError(f"option '{self.name}': in_file must be 'error' or "
                             f"'warn', got {self.in_file!r}")

    @property
    def argument(self) -> Optional[str]:
        """The constructor argument it sets, or ``None``."""
        if self.arg is None:
            return None
        return self.arg or self.name.rpartition('.')[2]

    def as_argument(self, value):
        return self.to_arg(value) if self.to_arg is not None else value


def _key(group: str, names: Sequence[str], key: str) -> str:
    return f'{group}.{key}' if key in names else key


@dataclass(frozen=True, eq=False)
class OptionGroup:
    """The options of one config group ``cfg.<name>``.

    Calling it on a config adds the group with its defaults (GraphGym's
    ``config_dict`` takes it as the group function).
    """
    name: str
    options: Tuple[Option, ...]
    help: str = ''

    def __post_init__(self):
        names = [o.name for o in self.options]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"group '{self.name}': option(s) {twice} declared twice")
        for opt in self.options:
            for key in opt.needs:
                if key not in names and '.' not in key:
                    raise ValueError(f"group '{self.name}': option '{opt.name}' needs "
                                     f"'{key}', which is not an option of the group")

    def __call__(self, cfg) -> None:
        from yacs.config import CfgNode
        node = cfg[self.name] = CfgNode()
        for opt in self.options:
            *parents, leaf = opt.name.split('.')
            where = node
            for part in parents:
                if part not in where:
                    where[part] = CfgNode()
                where = where[part]
            where[leaf] = list(opt.default) if isinstance(opt.default, tuple) \
                else opt.default

    def key(self, option: Option) -> str:
        """The dotted config key of ``option``."""
        return f'{self.name}.{option.name}'

    def needs(self, option: Option) -> Dict[str, Any]:
        """``{dotted key: value or test}`` under which ``option`` has an effect."""
        names = [o.name for o in self.options]
        return {_key(self.name, names, k): v for k, v in option.needs.items()}

    def unmet(self, cfg, option: Option) -> Dict[str, Any]:
        """The needs of ``option`` that ``cfg`` does not meet."""
        out = {}
        for key, want in self.needs(option).items():
            value = get(cfg, key)
            if not (want(value) if callable(want) else value == want):
                out[key] = want
        return out

    def value(self, cfg, option: Option, dim: Optional[int] = None):
        """The value of ``option`` that the run uses: the config's, or, while
        a need is not met, :attr:`Option.used` (else the default)."""
        if option.needs and self.unmet(cfg, option):
            if option.used is not None:
                return option.used(cfg, dim if dim is not None
                                   else int(get(cfg, 'gt.dim_hidden')))
            return option.default
        return get(cfg, self.key(option))

    def read_by(self, reader: Optional[str]):
        """The options that ``reader`` (a branch of the group) reads."""
        return tuple(o for o in self.options
                     if not o.readers or reader is None or reader in o.readers)

    def arguments(self, cfg, dim: Optional[int] = None,
                  reader: Optional[str] = None) -> Dict[str, Any]:
        """``{constructor argument: value}`` of the options ``reader`` reads."""
        return {o.argument: o.as_argument(self.value(cfg, o, dim))
                for o in self.read_by(reader) if o.argument is not None}

    def params(self, cfg) -> Dict[str, Any]:
        """``{param: value}`` of the options that enter a precompute."""
        return {o.param: self.value(cfg, o) for o in self.options
                if o.param is not None}


def resolve(args: Mapping[str, Any], cfg, dim: int) -> Dict[str, Any]:
    """Constructor arguments read from outside a group: ``{argument: dotted
    key | fn(cfg, dim) | WIDTH}``."""
    out = {}
    for arg, source in args.items():
        if source is WIDTH:
            out[arg] = dim
        elif callable(source):
            out[arg] = source(cfg, dim)
        else:
            out[arg] = get(cfg, source)
    return out


def defaults_of(cls, skip: Sequence[str] = ()) -> Dict[str, Any]:
    """``{argument: default}`` of ``cls``'s constructor (for the tests that
    hold the constructors to their entries)."""
    import inspect
    out = {}
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name != 'self' and name not in skip and p.default is not p.empty:
            out[name] = p.default
    return out


def entry_for_class(cls, by_path: Mapping[str, Any], catalogue: str):
    """The entry of ``by_path`` (``{'module:Class': entry}``) of the class
    ``cls`` or of its nearest base class that has one; ``KeyError`` naming
    the ``catalogue`` otherwise."""
    for klass in cls.__mro__:
        entry = by_path.get(f'{klass.__module__}:{klass.__qualname__}')
        if entry is not None:
            return entry
    raise KeyError(f'{cls.__qualname__} has no entry in the {catalogue}')
