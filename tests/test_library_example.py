"""The example of docs/library.md runs as written: a GEANet model in plain
PyG trains without GraphGym (never imported) or its global config."""
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, 'docs', 'library.md')


def python_blocks(path: str):
    return re.findall(r'^```python\n(.*?)^```$', open(path, encoding='utf-8').read(),
                      flags=re.S | re.M)


def test_the_library_page_is_linked_from_the_readme():
    assert '(docs/library.md)' in open(os.path.join(ROOT, 'README.md'),
                                       encoding='utf-8').read()


def test_the_plain_pyg_example_trains_without_graphgym(tmp_path):
    [example] = python_blocks(PAGE)
    model_lines = example[example.index('class Net'):example.index('torch.manual_seed')]
    assert len(model_lines.strip().splitlines()) <= 20
    check = ("\nimport sys\n"
             "assert not [m for m in sys.modules if 'graphgym' in m], 'GraphGym imported'\n")
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    done = subprocess.run([sys.executable, '-c', example + check], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loss = float(re.fullmatch(r'loss (\S+)\n', done.stdout).group(1))
    assert math.isfinite(loss) and loss < math.log(2) + 0.2
