#!/usr/bin/env python
"""Write every shipped config (``configs/{geaet,csa,mna,gt,gps,gin}/*.yaml``)
and the paper/table mapping ``run/tables.tsv`` from one description.

    python run/make_configs.py            # (re)write the files
    python run/make_configs.py --check    # exit 1 if a file is out of date

The description lives in ``run/generator/``, one module per paper
(``geaet``, ``csa``, ``mna``, ``gt``, ``gps``) plus the framework's own
``baselines``, on the building blocks of ``common``. Each config is a base
model from a paper's hyper-parameter table plus, for the ablations, the few
keys a table or figure varies. A YAML file starts with a header comment: what
it reproduces, where its hyper-parameters come from, and machine-read lines
checked by ``tests/test_configs.py``:

    # params: 113235 (GEAET Table 6 ...)   the authors' count (or 'none')
    # params differ: -2912 (reason)        per module in which our model differs
    # budget: 500000 (LRGB 500k)           the paper's parameter budget (or 'none')

The model a config builds has exactly ``params + sum(differ)`` parameters;
``# tolerance: x (reason)`` is only for counts a paper rounds.
``run/tables.tsv`` lists, per paper table or figure, the configs, their seeds
and the published number each is compared with (``run/paper_numbers.csv``).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'run'))

from generator import baselines, common, csa, geaet, gps, gt, mna  # noqa: E402

PAPERS = (geaet, csa, mna, gt, gps, baselines)


def build() -> common.Registry:
    reg = common.Registry()
    for paper in PAPERS:
        paper.build(reg)
    return reg


def write_all(check: bool = False) -> int:
    """Write (or check) every config and run/tables.tsv; returns an exit code."""
    configs = build()
    files = {os.path.join(ROOT, 'configs', c.path): common.render(c)
             for c in configs.values()}
    files[os.path.join(ROOT, 'run', 'tables.tsv')] = common.tables_tsv(configs)
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(os.path.relpath(path, ROOT))
        if not check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
    shipped = {os.path.join(ROOT, 'configs', c.path) for c in configs.values()}
    extra = []
    for folder in common.FOLDERS:
        base = os.path.join(ROOT, 'configs', folder)
        if os.path.isdir(base):
            extra += [os.path.join(base, f) for f in sorted(os.listdir(base))
                      if f.endswith('.yaml') and os.path.join(base, f) not in shipped]
    if check:
        for s in stale:
            print(f'out of date: {s}')
        for e in extra:
            print(f'not generated: {os.path.relpath(e, ROOT)}')
        return 1 if stale or extra else 0
    for e in extra:
        print(f'warning: {os.path.relpath(e, ROOT)} is not described here', file=sys.stderr)
    print(f'{len(configs)} configs, {len(stale)} file(s) written')
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--check', action='store_true',
                   help='only check that the files are up to date')
    args = p.parse_args(argv)
    return write_all(args.check)


if __name__ == '__main__':
    sys.exit(main())
