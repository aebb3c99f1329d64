r"""Tables of results across configs, to publish: CSV and LaTeX.

:func:`python -m graphgps_ext.report <graphgps_ext.report.main>` builds one
:class:`Entry` per config result (a row of a paper's table, or a config of
no paper) and writes them with :func:`write_csv` and :func:`write_latex`:

- **groups**: the entries of one paper table (``paper``, ``table``), or the
  configs of no paper with the same dataset; one LaTeX ``table`` each;
- **mean ± std**: over the finished seeds at each seed's best-validation
  epoch (population std, ``ddof=0``, as the report), in the unit the paper
  prints (accuracies in %, where it does);
- **best**: within a group, among the entries of one metric and split, the
  best mean in the metric's direction (every entry that ties it) is
  marked: ``best`` 1 in the CSV, bold in LaTeX.

The LaTeX file uses ``booktabs`` (``\usepackage{booktabs}``) and escapes
every name.
"""
import csv
import io
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from graphgps_ext.files import write_text

#: The columns of the CSV file, in order.
CSV_COLUMNS = ('group', 'paper', 'table', 'dataset', 'model', 'config', 'metric',
               'split', 'mean', 'std', 'seeds', 'best', 'paper_value', 'verdict',
               'epochs')


@dataclass
class Entry:
    """One result: ``mean``/``std`` over ``seeds`` of ``metric`` on
    ``split`` (``mode``: ``'min'`` or ``'max'`` is better), ``decimals`` to
    print; ``paper_value`` as the paper prints it (``''``: none)."""
    paper: str
    table: str
    dataset: str
    model: str
    config: str
    metric: str
    split: str
    mean: float
    std: float
    seeds: int
    mode: str
    decimals: int = 4
    paper_value: str = ''
    verdict: str = ''
    epochs: str = ''
    best: bool = field(default=False, compare=False)

    @property
    def group(self) -> str:
        return (f'{self.paper} {self.table}' if self.paper
                else f'{self.dataset}: other configs')


def mark_best(entries: Sequence[Entry]) -> List[Entry]:
    """Set ``best`` on the entries with the best mean of their group,
    metric and split (ties: each of them); returns the entries."""
    groups: Dict[Tuple[str, str, str], List[Entry]] = {}
    for e in entries:
        e.best = False
        if math.isfinite(e.mean):
            groups.setdefault((e.group, e.metric, e.split), []).append(e)
    for members in groups.values():
        pick = min if members[0].mode == 'min' else max
        top = pick(e.mean for e in members)
        for e in members:
            e.best = e.mean == top
    return list(entries)


def csv_text(entries: Sequence[Entry]) -> str:
    """The entries as CSV (:data:`CSV_COLUMNS`; numbers in full)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator='\n')
    w.writerow(CSV_COLUMNS)
    for e in entries:
        w.writerow([e.group, e.paper, e.table, e.dataset, e.model, e.config, e.metric,
                    e.split, repr(e.mean), repr(e.std), e.seeds, int(e.best),
                    e.paper_value, e.verdict, e.epochs])
    return out.getvalue()


_LATEX_SPECIAL = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$',
                  '#': r'\#', '_': r'\_', '{': r'\{', '}': r'\}',
                  '~': r'\textasciitilde{}', '^': r'\textasciicircum{}'}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return ''.join(_LATEX_SPECIAL.get(c, c) for c in str(text)).replace('±', r'$\pm$')


def _pm(e: Entry) -> str:
    text = f'{e.mean:.{e.decimals}f} $\\pm$ {e.std:.{e.decimals}f}'
    return f'\\textbf{{{text}}}' if e.best else text


def latex_text(entries: Sequence[Entry], titles: Optional[Dict[str, str]] = None) -> str:
    """One booktabs ``table`` per group: dataset, model, config, metric,
    ours (mean ± std, the best in bold), seeds and, for a paper's table, the
    paper's value. ``titles``: ``paper -> title`` for the captions."""
    titles = titles or {}
    groups: Dict[str, List[Entry]] = {}
    for e in entries:
        groups.setdefault(e.group, []).append(e)
    lines = ['% Written by python -m graphgps_ext.report; needs \\usepackage{booktabs}.',
             '% Ours: mean $\\pm$ population std over the finished seeds at each seed\'s',
             '% best-validation epoch; the best of a table (per metric) in bold.', '']
    for group, members in groups.items():
        paper = members[0].paper
        with_paper = any(e.paper_value for e in members)
        head = ['Dataset', 'Model', 'Config', 'Metric', 'Ours', 'Seeds'] + (
            ['Paper'] if with_paper else [])
        caption = (f'{titles.get(paper, paper)}, {members[0].table}' if paper
                   else f'{members[0].dataset}: configs of no paper table')
        lines += ['\\begin{table}[t]', '\\centering',
                  f'\\caption{{{latex_escape(caption)}: ours (mean $\\pm$ std over seeds)'
                  + (' beside the paper' if with_paper else '') + '; best in bold.}',
                  f'\\begin{{tabular}}{{llll{"r" * (len(head) - 4)}}}',
                  '\\toprule', ' & '.join(head) + ' \\\\', '\\midrule']
        for e in members:
            cells = [latex_escape(e.dataset), latex_escape(e.model),
                     f'\\texttt{{{latex_escape(e.config)}}}',
                     latex_escape(e.metric + (f' ({e.split})' if e.split != 'test' else '')),
                     _pm(e), str(e.seeds)]
            if with_paper:
                cells.append(latex_escape(e.paper_value or '—'))
            lines.append(' & '.join(cells) + ' \\\\')
        lines += ['\\bottomrule', '\\end{tabular}', '\\end{table}', '']
    return '\n'.join(lines)


def write_csv(entries: Sequence[Entry], path: str) -> str:
    """Write :func:`csv_text` atomically; returns ``path``."""
    write_text(path, csv_text(entries))
    return path


def write_latex(entries: Sequence[Entry], path: str,
                titles: Optional[Dict[str, str]] = None) -> str:
    """Write :func:`latex_text` atomically; returns ``path``."""
    write_text(path, latex_text(entries, titles))
    return path
