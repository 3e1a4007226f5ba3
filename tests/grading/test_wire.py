"""What the trusted side accepts back from learner code (grading/wire.py, grading/worker.py's encoder)."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

from grading import proxy, wire, worker
from lab02_device_plugin.plugin.sharing import AdvertisedDevice, DeviceState

TYPES = proxy._trusted_types(proxy.RECORD_TYPES)
RECORDS = frozenset(proxy.RECORD_TYPES)


def round_trip(value):
    return wire.decode(worker.encode(value, RECORDS), TYPES)


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2 ** 80, 1.5, math.inf, "text", [1, "a"], (1, (2, 3)), {"k": [1, 2]},
    {(1, 2): "tuple key"}, {1, 2}, frozenset({"a"}), [],
])
def test_plain_data_round_trips_with_exact_types(value) -> None:
    back = round_trip(value)
    assert back == value and type(back) is type(value)


def test_numpy_arrays_and_scalars_round_trip() -> None:
    arr = np.array([[1, 2], [3, 4]], dtype=np.int64)
    back = round_trip(arr)
    assert type(back) is np.ndarray and back.dtype == np.int64 and back.tolist() == [[1, 2], [3, 4]]
    assert back.flags.writeable
    for scalar in (np.int64(5), np.float32(0.5), np.bool_(True)):
        got = round_trip(scalar)
        assert type(got) is type(scalar) and got == scalar
    assert round_trip(np.zeros((0, 3))).shape == (0, 3)


def test_records_are_rebuilt_with_the_trusted_class() -> None:
    device = AdvertisedDevice("GPU-a::1", "GPU-a", "GPU-a", 0, replica=1)
    back = round_trip([device, DeviceState("GPU-a", "Healthy", 0)])
    assert back == [device, DeviceState("GPU-a", "Healthy", 0)]
    assert type(back[0]) is AdvertisedDevice and type(back[1]) is DeviceState


@pytest.mark.parametrize("node, message", [
    ({"r": "mod.Evil", "f": {}}, "not one of the course's records"),
    ({"r": "lab02_device_plugin.plugin.sharing.DeviceState", "f": {"id": "a"}}, "with fields"),
    ({"r": "lab02_device_plugin.plugin.sharing.DeviceState", "f": {"id": "a", "health": "x", "numa_node": 0,
                                                           "__eq__": 1}}, "with fields"),
    ({"a": {"dtype": "|O", "shape": [1], "b64": ""}}, "dtype '|O' not accepted"),
    ({"a": {"dtype": "<i8", "shape": [10 ** 9], "b64": ""}}, "does not match its shape"),
    ({"a": {"dtype": "<i8", "shape": [-1], "b64": ""}}, "non-negative"),
    ({"n": {"dtype": "<c16", "b64": base64.b64encode(b"0" * 16).decode()}}, "not accepted"),
    ({"s": [[1, 2]]}, "unhashable list"),
    ({"d": [[1]]}, "not a \\[key, value\\] pair"),
    ({"__reduce__": ["os.system", "true"]}, "keys"),
    ({"t": "notalist"}, "keys"),
    ({"e": "lab01_cluster_sim.model.JobState", "v": "PENDING"}, "not one of the course's records"),
])
def test_anything_else_is_refused(node, message: str) -> None:
    with pytest.raises(wire.DecodeError, match=message):
        wire.decode(node, TYPES)


def test_nesting_and_size_are_bounded() -> None:
    deep: object = 1
    for _ in range(worker.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(wire.DecodeError, match="deeper than"):
        wire.decode(deep, TYPES)
    with pytest.raises(worker.RefusedValue, match="too deeply nested"):
        worker.encode(deep)


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class MyStr(str):
    pass


@pytest.mark.parametrize("value, message", [
    (AlwaysEqual(), "AlwaysEqual object, which the grader does not take back"),
    (MyStr("x"), "a subclass of str: return a plain str"),
    ([1, AlwaysEqual()], "AlwaysEqual"),
    (print, "builtin_function_or_method"),
    (np.array([object()], dtype=object), "dtype object"),
    (iter([1]), "list_iterator"),
])
def test_the_encoder_refuses_with_a_message_for_the_learner(value, message: str) -> None:
    with pytest.raises(worker.RefusedValue, match=message):
        worker.encode(value, RECORDS)
