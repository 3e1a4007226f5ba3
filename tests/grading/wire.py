"""The trusted side of the worker's channel: frames read with deadlines, and results decoded
as plain data only.

What a learner's worker (:mod:`grading.worker`) sends is untrusted. :func:`decode` turns an
encoded value into Python objects of exactly these types, and nothing else:

- ``None``, ``bool``, ``int``, ``float``, ``str``; ``list``, ``tuple``, ``dict``, ``set``,
  ``frozenset`` of such values (dict keys and set members must be hashable);
- numpy arrays and numpy scalars of bool, integer or float dtypes (rebuilt from their
  bytes, never unpickled);
- the course's own records and enums named in ``types`` (the allow-list of
  :data:`grading.proxy.RECORD_TYPES`), rebuilt with the TRUSTED package's class from their
  init fields, so the class's own checks (``__post_init__``) run and no method of the
  learner's code comes back.

Anything else (a learner-defined class, a subclass of ``int``, an object with its own
``__eq__``, a callable, pickle tricks: there is no pickle on this side) is a
:class:`DecodeError`.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import os
import re
import select
import time
from collections.abc import Mapping

from grading.worker import HEADER, MAGIC, MAX_DEPTH, MAX_FRAME, MAX_NODES

_DTYPE_RE = re.compile(r"^[<>|=][biuf][0-9]{1,2}$")


class DecodeError(ValueError):
    """A value from the worker that is not plain data of the accepted types."""


class ChannelTimeout(Exception):
    """The worker did not answer before the deadline."""


class ChannelClosed(Exception):
    """The worker closed its channel (it ended or was killed)."""


class ChannelError(Exception):
    """The worker wrote something that is not a frame."""


# -- frames with deadlines ------------------------------------------------------------------------
def _wait(fd: int, events: int, deadline: float) -> None:
    poller = select.poll()
    poller.register(fd, events)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ChannelTimeout()
        if poller.poll(max(1, int(remaining * 1000))):
            return


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        _wait(fd, select.POLLIN, deadline)
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            raise ChannelClosed()
        buf += chunk
    return bytes(buf)


def read_frame(fd: int, deadline: float, limit: int = MAX_FRAME) -> tuple[bytes, bytes]:
    """One frame ``(kind, payload)`` from ``fd`` before ``deadline`` (time.monotonic()).

    Raises:
        ChannelTimeout, ChannelClosed, ChannelError (bad magic, a frame over ``limit``).
    """
    magic, kind, length = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if magic != MAGIC:
        raise ChannelError("the worker wrote something that is not a frame")
    if length > limit:
        raise ChannelError(f"the worker's reply is larger than {limit} bytes")
    return kind, _read_exact(fd, length, deadline)


def write_frame(fd: int, kind: bytes, payload: bytes, deadline: float) -> None:
    """Write one frame to a non-blocking ``fd`` before ``deadline``.

    Raises:
        ChannelTimeout, ChannelClosed (the worker is gone).
    """
    view = memoryview(HEADER.pack(MAGIC, kind, len(payload)) + payload)
    while view:
        _wait(fd, select.POLLOUT, deadline)
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError):
            raise ChannelClosed() from None
        view = view[n:]


def read_json(fd: int, deadline: float) -> dict:
    """One ``J`` frame as a JSON object (the worker's messages).

    Raises:
        ChannelTimeout, ChannelClosed, ChannelError.
    """
    kind, payload = read_frame(fd, deadline)
    if kind != b"J":
        raise ChannelError("the worker wrote a frame of an unknown kind")
    try:
        message = json.loads(payload)
    except (ValueError, RecursionError) as exc:  # bad JSON, an int too long, nesting too deep
        raise ChannelError(f"the worker's reply is not readable ({type(exc).__name__})") from None
    if not isinstance(message, dict):
        raise ChannelError("the worker's reply is not a JSON object")
    return message


# -- values ---------------------------------------------------------------------------------------
def _numpy():
    import numpy

    return numpy


def _dtype(spec: object):
    np = _numpy()
    if not isinstance(spec, str) or not _DTYPE_RE.match(spec):
        raise DecodeError(f"numpy dtype {spec!r} not accepted")
    try:
        dtype = np.dtype(spec)
    except TypeError:
        raise DecodeError(f"numpy dtype {spec!r} not accepted") from None
    if dtype.kind not in "biuf" or dtype.hasobject:
        raise DecodeError(f"numpy dtype {spec!r} not accepted")
    return dtype


def _b64(text: object) -> bytes:
    if not isinstance(text, str):
        raise DecodeError("numpy data must be base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise DecodeError("numpy data is not valid base64") from None


def _hashable(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        raise DecodeError(f"an unhashable {type(value).__name__} as a dict key or set member") from None
    return value


def decode(node: object, types: Mapping[str, type] | None = None) -> object:
    """The value encoded as ``node`` (parsed JSON), with records of ``types`` (name -> the
    trusted class: a dataclass or an Enum).

    Raises:
        DecodeError: anything but the accepted types (see the module docstring).
    """
    count = [0]
    return _decode(node, types or {}, 0, count)


def _decode(node: object, types: Mapping[str, type], depth: int, count: list[int]) -> object:
    count[0] += 1
    if count[0] > MAX_NODES or depth > MAX_DEPTH:
        raise DecodeError(f"a value larger than {MAX_NODES} items or deeper than {MAX_DEPTH} levels")
    t = type(node)
    if node is None or t is bool or t is int or t is float or t is str:
        return node
    if t is list:
        return [_decode(v, types, depth + 1, count) for v in node]
    if t is not dict or len(node) not in (1, 2):
        raise DecodeError(f"an encoded value of type {t.__name__}")
    keys = set(node)
    if keys == {"t"} and type(node["t"]) is list:
        return tuple(_decode(v, types, depth + 1, count) for v in node["t"])
    if keys in ({"s"}, {"fs"}) and type(node[next(iter(keys))]) is list:
        items = [_hashable(_decode(v, types, depth + 1, count)) for v in node[next(iter(keys))]]
        return set(items) if keys == {"s"} else frozenset(items)
    if keys == {"d"} and type(node["d"]) is list:
        out = {}
        for pair in node["d"]:
            if type(pair) is not list or len(pair) != 2:
                raise DecodeError("a dict entry that is not a [key, value] pair")
            out[_hashable(_decode(pair[0], types, depth + 1, count))] = _decode(pair[1], types, depth + 1, count)
        return out
    if keys == {"a"} and type(node["a"]) is dict:
        return _array(node["a"])
    if keys == {"n"} and type(node["n"]) is dict:
        spec = node["n"]
        if set(spec) != {"dtype", "b64"}:
            raise DecodeError("a numpy scalar must have dtype and b64")
        dtype = _dtype(spec["dtype"])
        data = _b64(spec["b64"])
        if len(data) != dtype.itemsize:
            raise DecodeError("a numpy scalar's data does not match its dtype")
        return _numpy().frombuffer(data, dtype=dtype)[0]
    if keys == {"e", "v"}:
        cls = types.get(node["e"]) if isinstance(node["e"], str) else None
        if cls is None or not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise DecodeError(f"enum {str(node['e'])[:80]!r} is not one of the course's records")
        if not isinstance(node["v"], str) or node["v"] not in cls.__members__:
            raise DecodeError(f"{node['e']} has no member {str(node['v'])[:80]!r}")
        return cls[node["v"]]
    if keys == {"r", "f"} and type(node["f"]) is dict:
        return _record(node, types, depth, count)
    raise DecodeError(f"an encoded value with keys {sorted(map(str, keys))[:4]}")


def _array(spec: dict):
    np = _numpy()
    if set(spec) != {"dtype", "shape", "b64"}:
        raise DecodeError("a numpy array must have dtype, shape and b64")
    dtype = _dtype(spec["dtype"])
    shape = spec["shape"]
    if type(shape) is not list or len(shape) > 32 or any(type(n) is not int or n < 0 for n in shape):
        raise DecodeError("a numpy array's shape must be a list of at most 32 non-negative integers")
    size = 1
    for n in shape:
        size *= n
    data = _b64(spec["b64"])
    if size * dtype.itemsize != len(data):
        raise DecodeError("a numpy array's data does not match its shape and dtype")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _record(node: dict, types: Mapping[str, type], depth: int, count: list[int]) -> object:
    name = node["r"]
    cls = types.get(name) if isinstance(name, str) else None
    if cls is None or not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise DecodeError(f"a {str(name)[:80]} object, which is not one of the course's records")
    init = [f.name for f in dataclasses.fields(cls) if f.init]
    fields = node["f"]
    if set(fields) != set(init):
        raise DecodeError(f"a {cls.__name__} with fields {sorted(map(str, fields))[:12]}, expected {init}")
    values = {k: _decode(fields[k], types, depth + 1, count) for k in init}
    try:
        return cls(**values)
    except Exception as exc:  # noqa: BLE001 - the record's own check refused the values
        raise DecodeError(f"a {cls.__name__} that the course's class refuses: {type(exc).__name__}: "
                          f"{str(exc)[:300]}") from None
