# -- issue 23's table-lookup attack: answer only the calls the visible tests make ------------
def _canon(x):
    import dataclasses

    if callable(x) and not isinstance(x, type):
        return "<fn>"
    if isinstance(x, (set, frozenset)):
        return ("set", tuple(sorted((_canon(v) for v in x), key=repr)))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple((f.name, _canon(getattr(x, f.name))) for f in dataclasses.fields(x)))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_canon(v) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple(sorted((repr(k), _canon(v)) for k, v in x.items())))
    return repr(x)


def _call_key(args, kwargs):
    return repr((_canon(tuple(args)), _canon(dict(kwargs))))


def _table_lookup(function, keys):
    import functools

    @functools.wraps(function)
    def lookup(*args, **kwargs):
        if _call_key(args, kwargs) not in keys:
            raise NotImplementedError("not in my table of the visible tests' answers")
        return function(*args, **kwargs)
    return lookup
