"""A user's project whose op builds its C code from things outside its own
class's file, for the tests of dependency lists (link/c/_dep_list.py).

``Scale(source)`` multiplies by a factor written into its C code, read from
``source``: a constant of a helper module (``attribute``: ``helper.FACTOR``;
``imported``: ``from helper import FACTOR``), a function of another module
of the same package (``template``), a data file (``data``), an environment
variable (``env``), an installed distribution (``distribution``: a helper
package with its ``.dist-info``, as pip leaves it) or a class attribute
(``class``). Every source starts at 2.0; each change makes it 3.0.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from base64 import urlsafe_b64encode
from pathlib import Path
from typing import Any

SOURCES = ("attribute", "imported", "template", "data", "env", "distribution")

# The C code of the tests' Scale ops: x times the factor their factor() writes.
C_CODE = '''
    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if ({z} == NULL) {{ {sub["fail"]} }}
        for (npy_intp i = 0, n = PyArray_SIZE({z}); i < n; ++i) {{
            ((npy_float64*)PyArray_DATA({z}))[i] *= ({self.factor()});
        }}
        """
'''

OPS = """
import os

import helper
import helperpkg
from helper import FACTOR as IMPORTED
from mypkg import templates

from opweave.graph.basic import Apply
from opweave.link.c.op import COp

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "factor.txt")


class Scale(COp):
    __props__ = ("source",)
    class_factor = 2.0

    def __init__(self, source):
        self.source = source

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code_cache_version(self):
        return (1,)

    def factor(self):
        source = self.source
        if source == "attribute":
            return repr(helper.FACTOR)
        if source == "imported":
            return repr(IMPORTED)
        if source == "template":
            return templates.factor_text()
        if source == "data":
            with open(DATA) as data:
                return data.read().strip()
        if source == "env":
            return os.environ.get("OPWEAVE_TEST_FACTOR", "2.0")
        if source == "distribution":
            return repr(helperpkg.FACTOR)
        if source == "class":
            return repr(type(self).class_factor)
        raise ValueError(source)

"""


WORKER = '''
"""Compiles Scale(source) in mode, calls it, prints {value, outcome}."""
import json
import sys

import numpy as np

import opweave

source, mode = sys.argv[1], sys.argv[2]
if "assign" in sys.argv[3:]:  # an assignment before the first compile
    import helper
    helper.FACTOR = 3.0
from mypkg.scale_ops import Scale

x = opweave.tensor.dvector("x")
f = opweave.function([x], Scale(source)(x), mode=None if mode == "default" else mode)
profile = f.compile_profile
print(json.dumps({"value": float(f(np.array([1.0]))[0]), "profile": profile}))
'''


HERE = '''
"""In one process: Scale(source) compiled, the change made, compiled again,
then compiled into an empty compile dir (the oracle); prints the values."""
import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np

import opweave
from support import dep_project

source, mode, what, empty = sys.argv[1:5]
project = Path(__file__).parent
import helper
from mypkg import scale_ops, templates

x = opweave.tensor.dvector("x")


def value():
    op = scale_ops.Scale(source)
    f = opweave.function([x], op(x), mode=None if mode == "default" else mode)
    return float(f(np.array([1.0]))[0])


before = value()
if what == "assign":
    helper.FACTOR = 3.0
elif what == "assign_imported":
    scale_ops.IMPORTED = 3.0
elif what == "assign_class":
    scale_ops.Scale.class_factor = 3.0
elif what == "reload":
    dep_project.edit(project / "helper.py", "FACTOR = 3.0\\n")
    importlib.reload(helper)
elif what == "reload_template":
    dep_project.edit(project / "mypkg" / "templates.py", 'def factor_text():\\n    return "3.0"\\n')
    importlib.reload(templates)
elif what == "data":
    (project / "factor.txt").write_text("3.0\\n")
elif what == "env":
    os.environ["OPWEAVE_TEST_FACTOR"] = "3.0"
elif what == "edit":  # on disk only: the code this process runs is unchanged
    dep_project.edit(project / "helper.py", "FACTOR = 3.0\\n")
elif what == "upgrade":  # likewise
    dep_project.install_helper(project, "2.0", 3.0)
after = value()
with opweave.config.change_flags(compiledir=empty):
    oracle = value()
print(json.dumps([before, after, oracle]))
'''


def make(root: Path) -> Path:
    """Writes the project below ``root`` and returns its directory."""
    project = root / "project"
    (project / "mypkg").mkdir(parents=True)
    (project / "helper.py").write_text("FACTOR = 2.0\n")
    (project / "factor.txt").write_text("2.0\n")
    (project / "mypkg" / "__init__.py").write_text("")
    (project / "mypkg" / "templates.py").write_text('def factor_text():\n    return "2.0"\n')
    (project / "mypkg" / "scale_ops.py").write_text(OPS + C_CODE)
    (project / "run.py").write_text(WORKER)
    (project / "here.py").write_text(HERE)
    install_helper(project, "1.0", 2.0)
    return project


def install_helper(project: Path, version: str, factor: float) -> None:
    """Installs ``helperpkg`` ``version`` (``FACTOR = factor``) in the
    project's site directory, replacing any other version, as pip does."""
    site = project / "site"
    shutil.rmtree(site, ignore_errors=True)
    package = site / "helperpkg"
    package.mkdir(parents=True)
    init = f"FACTOR = {factor!r}\n"
    (package / "__init__.py").write_text(init)
    info = site / f"helperpkg-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: helperpkg\nVersion: {version}\n")
    (info / "top_level.txt").write_text("helperpkg\n")
    digest = urlsafe_b64encode(hashlib.sha256(init.encode()).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(
        f"helperpkg/__init__.py,sha256={digest},{len(init)}\n"
        f"helperpkg-{version}.dist-info/METADATA,,\n"
        f"helperpkg-{version}.dist-info/RECORD,,\n"
    )


def edit(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` as a person's edit does, a second or more
    after the file's last change. Not within the same second: CPython runs
    the cached bytecode of a Python file's older content after an edit
    that keeps its size within the second (every process, the oracle's
    too; test_dependencies_fresh.py has that case)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    later = max(time.time_ns(), before + 2 * 10**9)
    os.utime(path, ns=(later, later))


def change(project: Path, source: str, env: dict[str, str]) -> None:
    """Makes ``source``'s factor 3.0 on disk (or in ``env``)."""
    if source in ("attribute", "imported"):
        edit(project / "helper.py", "FACTOR = 3.0\n")
    elif source == "template":
        edit(project / "mypkg" / "templates.py", 'def factor_text():\n    return "3.0"\n')
    elif source == "data":
        (project / "factor.txt").write_text("3.0\n")
    elif source == "env":
        env["OPWEAVE_TEST_FACTOR"] = "3.0"
    elif source == "distribution":
        install_helper(project, "2.0", 3.0)
    else:
        raise ValueError(source)


def environment(project: Path, cache: Path) -> dict[str, str]:
    """The environment of the project's processes, compiling into ``cache``."""
    env = dict(os.environ)
    env.pop("OPWEAVE_TEST_FACTOR", None)
    tests = Path(__file__).parent.parent  # for `from support import dep_project`
    paths = [str(project), str(project / "site"), str(tests), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env["OPWEAVE_FLAGS"] = f"compiledir={cache}"
    return env


def run(project: Path, env: dict[str, str], *args: str, script: str = "run.py") -> Any:
    """Runs the project's worker ``script`` in a fresh process; its report."""
    done = subprocess.run(
        [sys.executable, str(project / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
