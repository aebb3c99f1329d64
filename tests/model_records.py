"""The model every config builds, recorded: its trainable parameter count
and a digest of its structure (every module's name and class, every
parameter's and buffer's name, shape and dtype; no values, so that the
record holds on any machine and torch release).

``model_records.json`` holds one record per shipped config
(``configs/<family>/<name>.yaml``) and per foreign config
(``<source>/<file>.yaml`` of ``tests/foreign_configs``, and of the folder
named by ``GRAPHGPS_EXT_FOREIGN_CONFIGS`` where it is present). The config
tests (``test_configs.py``, ``test_compat.py``) compare the model they build
with it, so that a change of the code that builds models (config groups,
``from_cfg``, constructors, encoders) cannot change a shipped config's model
unnoticed. A change that means to change a model records again::

    python tests/model_records.py            # every config and fixture
"""
import glob
import hashlib
import json
import os
import sys
from typing import Dict, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, 'tests', 'model_records.json')
SHIPPED = os.path.join(ROOT, 'tests', 'foreign_configs')
FOREIGN_SOURCES = ('graphgps', 'csa', 'geaet')


def fingerprint(model) -> Dict[str, object]:
    """``{'params': trainable count, 'structure': digest}`` of ``model``."""
    digest = hashlib.sha256()
    for name, module in model.named_modules():
        digest.update(f'{name}:{type(module).__name__}\n'.encode())
    for name, tensor in model.state_dict().items():
        digest.update(f'{name}:{tuple(tensor.shape)}:{tensor.dtype}\n'.encode())
    return {'params': sum(p.numel() for p in model.parameters() if p.requires_grad),
            'structure': digest.hexdigest()[:20]}


def _records() -> Dict[str, dict]:
    with open(RECORDS, encoding='utf-8') as f:
        return json.load(f)


def check(key: str, model) -> None:
    """Assert that ``model`` is the one recorded for config ``key``."""
    recorded: Optional[dict] = _records().get(key)
    assert recorded is not None, (
        f'{key}: no recorded model; record it with python tests/model_records.py')
    found = fingerprint(model)
    assert found == recorded, (
        f"{key}: the model differs from the recorded one ({found['params']:,} "
        f"parameters, recorded {recorded['params']:,}; structure "
        f"{found['structure']} vs {recorded['structure']}); if the change is "
        'meant, record again: python tests/model_records.py')


def foreign_folders():
    """``{source: folder}``: the shipped fixtures, and the unshipped ones of
    ``GRAPHGPS_EXT_FOREIGN_CONFIGS`` where the variable names a folder."""
    out = {s: SHIPPED for s in ('graphgps', 'csa')}
    extra = os.environ.get('GRAPHGPS_EXT_FOREIGN_CONFIGS')
    if extra and os.path.isdir(os.path.join(extra, 'geaet')):
        out['geaet'] = extra
    return out


def record() -> Dict[str, dict]:
    """Build every config's model (shipped configs with the dataset shapes of
    :mod:`graphgps_ext.loader.shapes`, foreign ones through ``--dry-run``'s
    check) and write their records (keeping those of absent fixtures)."""
    import torch

    from config_data import task_for
    from graphgps_ext.config import ConfigError
    from graphgps_ext.dry_run import check as dry_run
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.runs.seed import build_model

    out = _records() if os.path.exists(RECORDS) else {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'configs', '*', '*.yaml'))):
        cfg = load_cfg(path, [])
        torch.manual_seed(0)
        out[os.path.relpath(path, ROOT)] = fingerprint(build_model(cfg, task_for(cfg)))
    for source, folder in foreign_folders().items():
        for path in sorted(glob.glob(os.path.join(folder, source, '*.yaml'))):
            try:
                result = dry_run(path, [])
            except ConfigError:  # refused at start, naming the key
                continue
            if result.model is not None:
                out[f'{source}/{os.path.basename(path)}'] = fingerprint(result.model)
    with open(RECORDS, 'w', encoding='utf-8') as f:
        json.dump(dict(sorted(out.items())), f, indent=1)
        f.write('\n')
    return out


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, ROOT)
    import torch
    torch.set_num_threads(1)
    print(f'{len(record())} models recorded in {os.path.relpath(RECORDS, ROOT)}')
