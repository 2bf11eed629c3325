"""The test code's globals in the judge: the judge's own names first, the program's names fetched through the
RPC on first use."""
from __future__ import annotations

import builtins

from ..serialize import Opaque
from .proxy import Client, RemoteRef


class JudgeNamespace(dict):
    """Globals of the test code: the judge's own names first; a name the program defines (its functions,
    classes, constants, imported modules) is fetched from the candidate on first use."""

    def __init__(self, client: Client, *args):
        super().__init__(*args)
        self.client = client

    def __missing__(self, name):
        c = self.client
        if name in builtins.__dict__ and name != c.entry_name:
            raise KeyError(name)   # the judge's own builtin, even where the program rebinds the name
        if name != c.entry_name and _judge_module(name):
            mod = c._import(name)   # a module name the test uses unimported (`sys.getsizeof`): the judge's own,
            if mod is not None:     # never a `sys` the program defines
                self[name] = mod
                return mod
        value = c.lookup(name)
        if isinstance(value, Opaque) and value.type_name == "missing-name":
            raise KeyError(name)
        if type(value) is RemoteRef or isinstance(value, type) or type(value).__name__ == "module":
            self[name] = value   # one lookup per name (a module is the judge's own import)
        return value


def _judge_module(name: str) -> bool:
    """Whether ``name`` is a top-level module the judge itself can import."""
    import sys
    if not name.isidentifier():
        return False
    if name in sys.modules:
        return True
    try:
        from importlib.util import find_spec
        return find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False
