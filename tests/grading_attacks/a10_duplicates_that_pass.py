

# ---- attack a10 (a02 + a03 on an empty submission): add 10 copies of every graded test under names test_x[dK]; the grader adds the points
# of every <testcase> whose name before '[' is a declared test (as if they were parametrized cases) ----
def _a10():
    import re
    import sys
    f = sys._getframe()
    cfg = None
    while f is not None and cfg is None:
        for v in list(f.f_locals.values()):
            c = getattr(v, "config", None)
            if c is not None and hasattr(c, "pluginmanager"):
                cfg = c
                break
        f = f.f_back
    if cfg is None or cfg.pluginmanager.has_plugin("a10"):
        return

    class _Plugin:
        def pytest_collection_finish(self, session):  # after the grading plugin numbered the tests
            items = session.items
            out = []
            for it in items:
                control = re.fullmatch(r"test_[0-9a-f]{12}", it.name) is not None
                out.append(it)
                if not control:
                    clones = [type(it).from_parent(it.parent, name=f"{it.name}[d{k}]", callobj=it.obj,
                                                   originalname=it.originalname) for k in range(10)]
                    for c in [it] + clones:
                        c.runtest = lambda: None   # passes (as in a03)
                    out += clones
            items[:] = out

    cfg.pluginmanager.register(_Plugin(), "a10")


try:
    _a10()
except Exception:
    pass
