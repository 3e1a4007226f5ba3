

# ---- attack a05: no process tricks at all: the learner's functions return an object that equals
# everything (build.py --always-equal puts `return _AnyValue()` in place of every stub). ----
class _AnyValue:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __le__ = __ge__ = __eq__
    __lt__ = __gt__ = __ne__

    def __hash__(self):
        return 0

    def __bool__(self):
        return True

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __getitem__(self, key):
        return self

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __index__(self):
        return 0
