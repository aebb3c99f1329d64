"""Every command block of README.md works as written.

The ``bash`` blocks run in order, each as one ``bash -e`` script, in a
scratch copy of the checkout (its tracked files, nothing beside it: what a
user has after ``git clone``), so that what they write never touches the
checkout. A block
preceded by ``<!-- readme-test: skip (reason) -->`` is not run: installing,
the test suite itself, runs of hours, GPUs and clusters. Every other block
must exit 0.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = re.compile(r'<!--\s*readme-test:\s*skip\s*\((.+?)\)\s*-->')


def blocks():
    """``[(first line number, script, skip reason or None)]`` of README.md's
    bash blocks."""
    lines = open(os.path.join(ROOT, 'README.md')).read().splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == '```bash':
            start = i
            body = []
            i += 1
            while lines[i].strip() != '```':
                body.append(lines[i])
                i += 1
            before = next((lines[j] for j in range(start - 1, -1, -1)
                           if lines[j].strip()), '')
            m = SKIP.search(before)
            out.append((start + 1, '\n'.join(body) + '\n', m.group(1) if m else None))
        i += 1
    return out


def test_setup_and_test_commands_are_the_ci_ones():
    """The README's install commands (newest releases, and pinned by
    ``constraints.txt``) and its test command are what CI runs, each
    install into a fresh virtual environment."""
    ci = open(os.path.join(ROOT, '.ci', 'run')).read()
    scripts = [script for _, script, _ in blocks()]
    assert scripts[0].strip() == 'pip install torch==2.13.0 && pip install -e ".[dev]"'
    assert scripts[1].strip() == ('pip install torch==2.13.0 -c constraints.txt && '
                                  'pip install -e ".[dev]" -c constraints.txt')
    assert '-m venv ' in ci and '--system-site-packages' not in ci
    assert '-m pip install -q torch==2.13.0 "$@"' in ci
    assert '-m pip install -q -e ".[dev]" "$@"' in ci
    assert 'fresh_env newest)' in ci and 'fresh_env pinned -c constraints.txt)' in ci
    assert 'python -m pytest -q tests\n' in scripts
    assert ci.count('-m pytest -q tests)') == 2


def test_constraints_pin_every_dependency_within_its_range():
    """``constraints.txt`` pins each dependency of ``pyproject.toml`` (the
    core and the ``dev`` extra) at a version its range allows, and nothing
    twice."""
    tomllib = pytest.importorskip('tomllib')  # Python 3.11+
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    meta = tomllib.load(open(os.path.join(ROOT, 'pyproject.toml'), 'rb'))['project']
    pins = {}
    for line in open(os.path.join(ROOT, 'constraints.txt')):
        line = line.split('#', 1)[0].strip()
        if line:
            req = Requirement(line)
            spec = list(req.specifier)
            assert len(spec) == 1 and spec[0].operator == '==', line
            name = canonicalize_name(req.name)
            assert name not in pins, f'{req.name} pinned twice'
            pins[name] = spec[0].version
    wanted = meta['dependencies'] + meta['optional-dependencies']['dev']
    assert len(wanted) > 10
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f'{req.name} is not pinned in constraints.txt'
        assert req.specifier.contains(pins[name], prereleases=True), (
            f'constraints.txt pins {req.name}=={pins[name]}, outside {req.specifier}')


def _copy_checkout(dest):
    files = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split('\0')
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))


@pytest.mark.skipif(shutil.which('git') is None or not os.path.isdir(os.path.join(ROOT, '.git')),
                    reason='needs a git checkout')
def test_readme_commands_run_as_written(tmp_path):
    work = tmp_path / 'checkout'
    _copy_checkout(str(work))
    env = dict(os.environ, PYTHONPATH=str(work), OMP_NUM_THREADS='1',
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    ran = 0
    for line, script, skip in blocks():
        if skip is not None:
            continue
        # Never (re)install from a test: such a block must say skip.
        assert not re.search(r'\bpip install\b|\bconda\b', script), (
            f'README.md line {line}: an install command must be marked '
            "'<!-- readme-test: skip (installs packages) -->'")
        proc = subprocess.run(['bash', '-e', '-c', script], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f'README.md line {line}: exit {proc.returncode}\n{script}\n'
            f'{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}')
        assert 'Traceback' not in proc.stderr, f'README.md line {line}\n{proc.stderr}'
        if 'configs/quickstart.yaml\n' in script and 'main.py' in script:
            # The quick start's log file: an ETA on every epoch's line, and
            # the best epoch it names is best.json's.
            run = work / 'results' / 'quickstart' / '0'
            log = (run / 'logging.log').read_text()
            best = json.loads((run / 'best.json').read_text())
            assert log.count(' ETA ') == 10
            assert f"INFO best epoch {best['epoch']}: " in log
            assert f"INFO best epoch {best['epoch']}: " in proc.stdout
        if re.search(r'^python -m graphgps_ext\.report\s*(#|$)', script, re.M):
            # The report's tables to publish.
            assert (work / 'results' / 'REPORT.csv').read_text().startswith('group,paper,')
            assert '\\begin{tabular}' in (work / 'results' / 'REPORT.tex').read_text()
        if '--overlay quickstart quick-3layers' in script:
            assert (work / 'results' / 'overlay_quickstart_quick-3layers.png').exists()
        if 'graphgps_ext.viz' in script:
            assert (work / 'results' / 'quickstart' / 'viz' / 'attention_nodes.png').exists()
        ran += 1
    assert ran >= 9
