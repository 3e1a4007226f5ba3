# a pytest plugin (loaded by -p) for issue 23's table-lookup attack: while the visible graded
# tests run on the instructor's code, record the arguments of every call of a learner
# function (a11_table_lookup._call_key), so that a submission can answer exactly those calls
# and nothing else. RECORD_FUNCTIONS: a JSON list of [module, name]; RECORD_OUT: where the
# keys go ({"module.name": [key, ...]}).
import importlib
import json
import os

from a11_table_lookup import _call_key
from grading import proxy

KEYS = {}


class Recorder:
    def __init__(self, originals):
        self.originals = originals

    def call(self, module, name, args, kwargs):
        KEYS.setdefault(f"{module}.{name}", set()).add(_call_key(args, kwargs))
        return self.originals[(module, name)](*args, **kwargs)


def pytest_configure(config):
    functions = [tuple(f) for f in json.loads(os.environ["RECORD_FUNCTIONS"])]
    originals = {(m, n): getattr(importlib.import_module(m), n) for m, n in functions}
    proxy.install(Recorder(originals), functions)


def pytest_unconfigure(config):
    with open(os.environ["RECORD_OUT"], "w") as f:
        json.dump({k: sorted(v) for k, v in KEYS.items()}, f)
