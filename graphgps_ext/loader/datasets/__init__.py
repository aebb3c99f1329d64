r"""Every dataset declared once: one module per dataset family.

A family module (``zinc.py``, ``tu.py``, ...) declares

- ``FORMATS``: the ``dataset.format`` values it reads (:class:`Format`: the
  reader that turns a config into a :class:`~graphgps_ext.loader.sources.Source`);
- ``DATASETS``: its datasets (:class:`Dataset`: the ``dataset.name`` values
  and aliases per format, the task spec -- outputs, loss, metric, encoders,
  head -- and the random graphs of ``--dry-run``).

Everything else derives from these declarations: the name checks and their
did-you-mean (:func:`~graphgps_ext.loader.sources.check_dataset`),
:func:`~graphgps_ext.loader.sources.dataset_names`, the task spec known
without data (:func:`~graphgps_ext.loader.sources.spec_of`), the loader's
:class:`~graphgps_ext.task.TaskInfo` (:func:`spec`) and the dry-run shapes
(:mod:`graphgps_ext.loader.shapes`).

Adding a dataset: one family module and its line in :data:`FAMILIES` (or
one more :class:`Dataset` in the family module of a format that reads it).
"""
import copy
import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

#: The family modules, in order: modules of this package, or any importable
#: module. Formats are listed in this order.
FAMILIES: List[str] = ['zinc', 'gnn_benchmark', 'tu', 'lrgb', 'ogb', 'synthetic']

# Task kinds shared by several datasets.
GRAPH_REGRESSION = dict(task='graph', task_type='regression', loss='l1',
                        metric='mae', metrics=['mae', 'mse'], head='graph_mlp')
GRAPH_CLASSIFICATION = dict(task='graph', task_type='classification',
                            loss='cross_entropy', metric='accuracy',
                            metrics=['accuracy', 'f1_macro'], head='graph_mlp')
GRAPH_MULTILABEL = dict(task='graph', task_type='classification_multilabel',
                        loss='bce', metric='ap', metrics=['ap', 'auroc'],
                        head='graph_mlp')
MOLECULE = dict(node_encoder='Atom', edge_encoder='Bond')

Names = Union[Sequence[str], Callable[[], List[str]], None]


@dataclass(frozen=True)
class Format:
    """A ``dataset.format`` and its reader.

    Attributes:
        name: the ``dataset.format`` value.
        reader: ``'module:function'``, ``function(cfg) -> Source``.
        ignore_case: ``dataset.name`` is matched case-insensitively.
        more_names: names the reader takes besides those of the datasets
            (a list, or a function returning it), whose task is known only
            from the data (e.g. every OGB graph dataset).
    """
    name: str
    reader: str
    ignore_case: bool = False
    more_names: Names = ()


@dataclass(frozen=True)
class Dataset:
    """A dataset (or a class of datasets read alike).

    Attributes:
        key: the name of its task spec (what a reader returns as
            ``Source.spec_key``).
        spec: the :class:`~graphgps_ext.task.TaskInfo` fields the benchmark
            fixes: ``task``, ``task_type``, ``num_outputs`` (``None``: read
            from the data), ``loss``, ``metric``, ``metrics``, encoders,
            ``head`` (and ``node_num_types`` where fixed).
        names: ``dataset.format`` -> its ``dataset.name`` values for this
            dataset, aliases included (``None``: every name that no other
            dataset of the format claims).
        graph: ``graph(gen, num_nodes, cfg, num_outputs) -> Data``: a random
            graph shaped like the dataset's (``--dry-run``, config tests), or
            ``None`` when the shapes need the data.
        extras: ``extras(cfg) -> dict``: what the reader reads from the data
            beside the graphs, known without it (``num_outputs``,
            ``node_num_types``, :attr:`TaskInfo.extra` entries).
    """
    key: str
    spec: Mapping[str, Any]
    names: Mapping[str, Names] = field(default_factory=dict)
    graph: Optional[Callable] = None
    extras: Optional[Callable] = None

    def outputs(self, cfg) -> Optional[int]:
        """The number of outputs, known without data (or ``None``)."""
        n = self.spec.get('num_outputs')
        if n is None and self.extras is not None:
            n = self.extras(cfg).get('num_outputs')
        return n


def _module(name: str):
    """A family module: one of this package, else ``name`` itself."""
    local = f'{__name__}.{name}'
    return importlib.import_module(
        local if importlib.util.find_spec(local) is not None else name)


def _load(path: str):
    module, _, attr = path.partition(':')
    return getattr(importlib.import_module(module), attr)


def _names(names: Names) -> Optional[List[str]]:
    if names is None:
        return None
    return list(names() if callable(names) else names)


def formats() -> Dict[str, Format]:
    """``{dataset.format: Format}`` of every family, in :data:`FAMILIES` order."""
    out: Dict[str, Format] = {}
    for family in FAMILIES:
        for fmt in getattr(_module(family), 'FORMATS', ()):
            if fmt.name in out:
                raise ValueError(f"dataset.format '{fmt.name}' is declared twice")
            out[fmt.name] = fmt
    return out


def datasets() -> Dict[str, Dataset]:
    """``{key: Dataset}`` of every family."""
    out: Dict[str, Dataset] = {}
    known = formats()
    for family in FAMILIES:
        for ds in _module(family).DATASETS:
            if ds.key in out:
                raise ValueError(f"dataset '{ds.key}' is declared twice")
            for fmt in ds.names:
                if fmt not in known:
                    raise ValueError(f"dataset '{ds.key}': unknown format '{fmt}'")
            out[ds.key] = ds
    return out


def reader(fmt: str) -> Callable:
    """The reader of ``dataset.format`` ``fmt``."""
    return _load(formats()[fmt].reader)


def spec(key: str) -> Dict[str, Any]:
    """A copy of the task spec of dataset ``key``."""
    return copy.deepcopy(dict(datasets()[key].spec))


def names(fmt: str) -> Optional[List[str]]:
    """The ``dataset.name`` values of ``fmt`` (``None``: any name)."""
    out: List[str] = []
    for ds in datasets().values():
        if fmt in ds.names:
            given = _names(ds.names[fmt])
            if given is None:
                return None
            out += [n for n in given if n not in out]
    out += [n for n in _names(formats()[fmt].more_names) if n not in out]
    return out


def find(fmt: str, name: str, any_name: bool = True) -> Optional[Dataset]:
    """The dataset that ``dataset.format`` ``fmt`` / ``dataset.name``
    ``name`` selects, or ``None`` (unknown format, or a dataset whose task
    is known only from its data). ``any_name=False``: only a dataset that
    lists ``name``, not one that takes any name."""
    fmts = formats()
    if fmt not in fmts:
        return None
    fold = (lambda s: s.lower()) if fmts[fmt].ignore_case else (lambda s: s)
    catch_all = None
    for ds in datasets().values():
        if fmt not in ds.names:
            continue
        given = _names(ds.names[fmt])
        if given is None:
            catch_all = catch_all or ds
        elif fold(str(name)) in [fold(n) for n in given]:
            return ds
    return catch_all if any_name else None
