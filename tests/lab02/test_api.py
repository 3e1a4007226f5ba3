"""The committed .proto and stubs are the kubelet's device plugin API v1beta1, on the wire.

Expected names, numbers and types are written by hand from the upstream api.proto
(kubernetes staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto), not read
back from our own files.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc

REPO_ROOT = Path(__file__).resolve().parents[2]
API_DIR = REPO_ROOT / "lab02_device_plugin" / "api"

S, B, I32, I64, MSG = "string", "bool", "int32", "int64", "message"
ONE, REP = "optional", "repeated"

# message -> [(field name, number, type, label, message type or None)] -- facts sec. 1 table.
EXPECTED_MESSAGES = {
    "DevicePluginOptions": [("pre_start_required", 1, B, ONE, None),
                            ("get_preferred_allocation_available", 2, B, ONE, None)],
    "RegisterRequest": [("version", 1, S, ONE, None), ("endpoint", 2, S, ONE, None),
                        ("resource_name", 3, S, ONE, None),
                        ("options", 4, MSG, ONE, "v1beta1.DevicePluginOptions")],
    "Empty": [],
    "ListAndWatchResponse": [("devices", 1, MSG, REP, "v1beta1.Device")],
    "TopologyInfo": [("nodes", 1, MSG, REP, "v1beta1.NUMANode")],
    "NUMANode": [("ID", 1, I64, ONE, None)],
    "Device": [("ID", 1, S, ONE, None), ("health", 2, S, ONE, None),
               ("topology", 3, MSG, ONE, "v1beta1.TopologyInfo")],
    "PreStartContainerRequest": [("devices_ids", 1, S, REP, None)],
    "PreStartContainerResponse": [],
    "PreferredAllocationRequest": [
        ("container_requests", 1, MSG, REP, "v1beta1.ContainerPreferredAllocationRequest")],
    "ContainerPreferredAllocationRequest": [("available_deviceIDs", 1, S, REP, None),
                                            ("must_include_deviceIDs", 2, S, REP, None),
                                            ("allocation_size", 3, I32, ONE, None)],
    "PreferredAllocationResponse": [
        ("container_responses", 1, MSG, REP, "v1beta1.ContainerPreferredAllocationResponse")],
    "ContainerPreferredAllocationResponse": [("deviceIDs", 1, S, REP, None)],
    "AllocateRequest": [("container_requests", 1, MSG, REP, "v1beta1.ContainerAllocateRequest")],
    "ContainerAllocateRequest": [("devices_ids", 1, S, REP, None)],
    "CDIDevice": [("name", 1, S, ONE, None)],
    "AllocateResponse": [("container_responses", 1, MSG, REP, "v1beta1.ContainerAllocateResponse")],
    # envs and annotations are map<string,string>: on the wire, repeated <Name>Entry messages.
    "ContainerAllocateResponse": [
        ("envs", 1, MSG, REP, "v1beta1.ContainerAllocateResponse.EnvsEntry"),
        ("mounts", 2, MSG, REP, "v1beta1.Mount"),
        ("devices", 3, MSG, REP, "v1beta1.DeviceSpec"),
        ("annotations", 4, MSG, REP, "v1beta1.ContainerAllocateResponse.AnnotationsEntry"),
        ("cdi_devices", 5, MSG, REP, "v1beta1.CDIDevice")],
    "Mount": [("container_path", 1, S, ONE, None), ("host_path", 2, S, ONE, None),
              ("read_only", 3, B, ONE, None)],
    "DeviceSpec": [("container_path", 1, S, ONE, None), ("host_path", 2, S, ONE, None),
                   ("permissions", 3, S, ONE, None)],
}

# (service, method) -> (request, response, server streaming) -- facts sec. 1 services table.
EXPECTED_RPCS = {
    ("Registration", "Register"): ("RegisterRequest", "Empty", False),
    ("DevicePlugin", "GetDevicePluginOptions"): ("Empty", "DevicePluginOptions", False),
    ("DevicePlugin", "ListAndWatch"): ("Empty", "ListAndWatchResponse", True),
    ("DevicePlugin", "GetPreferredAllocation"):
        ("PreferredAllocationRequest", "PreferredAllocationResponse", False),
    ("DevicePlugin", "Allocate"): ("AllocateRequest", "AllocateResponse", False),
    ("DevicePlugin", "PreStartContainer"):
        ("PreStartContainerRequest", "PreStartContainerResponse", False),
}

_TYPE_NAMES = {FieldDescriptor.TYPE_STRING: S, FieldDescriptor.TYPE_BOOL: B,
               FieldDescriptor.TYPE_INT32: I32, FieldDescriptor.TYPE_INT64: I64,
               FieldDescriptor.TYPE_MESSAGE: MSG}


def _label(field: FieldDescriptor) -> str:
    # protobuf >= 5 has is_repeated; older versions only label.
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        repeated = field.label == FieldDescriptor.LABEL_REPEATED
    return REP if repeated else ONE


def test_package_and_syntax() -> None:
    assert pb.DESCRIPTOR.package == "v1beta1"
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    assert proto.syntax == "proto3"
    assert proto.options.go_package == "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"


def test_message_set_is_exactly_the_upstream_one() -> None:
    assert sorted(pb.DESCRIPTOR.message_types_by_name) == sorted(EXPECTED_MESSAGES)


@pytest.mark.parametrize("message", sorted(EXPECTED_MESSAGES))
def test_fields_names_numbers_types(message: str) -> None:
    desc = pb.DESCRIPTOR.message_types_by_name[message]
    got = [(f.name, f.number, _TYPE_NAMES[f.type], _label(f),
            f.message_type.full_name if f.message_type else None)
           for f in sorted(desc.fields, key=lambda f: f.number)]
    assert got == EXPECTED_MESSAGES[message]


@pytest.mark.parametrize("field", ["envs", "annotations"])
def test_map_fields_are_string_to_string(field: str) -> None:
    desc = pb.ContainerAllocateResponse.DESCRIPTOR.fields_by_name[field].message_type
    assert desc.GetOptions().map_entry
    assert [(f.name, f.number, _TYPE_NAMES[f.type]) for f in desc.fields] == [
        ("key", 1, S), ("value", 2, S)]


def test_services_and_wire_paths() -> None:
    got = {}
    for service in pb.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            got[(service.name, method.name)] = (method.input_type.name, method.output_type.name,
                                                method.server_streaming)
            assert not method.client_streaming
    assert got == EXPECTED_RPCS


def test_stub_wire_paths() -> None:
    """The gRPC method paths the stubs use are /v1beta1.<Service>/<Method>."""
    text = (API_DIR / "deviceplugin_pb2_grpc.py").read_text()
    paths = set(re.findall(r"'(/v1beta1\.[A-Za-z]+/[A-Za-z]+)'", text))
    assert paths == {f"/v1beta1.{svc}/{m}" for svc, m in EXPECTED_RPCS}


def test_odd_casing_is_kept_in_python_attributes() -> None:
    request = pb.ContainerPreferredAllocationRequest(
        available_deviceIDs=["a", "b"], must_include_deviceIDs=["a"], allocation_size=1)
    response = pb.ContainerAllocateResponse(envs={"K": "V"}, cdi_devices=[pb.CDIDevice(name="x=y")])
    device = pb.Device(ID="GPU-1::0", health="Healthy",
                       topology=pb.TopologyInfo(nodes=[pb.NUMANode(ID=1)]))
    assert list(request.available_deviceIDs) == ["a", "b"]
    assert dict(response.envs) == {"K": "V"}
    assert device.topology.nodes[0].ID == 1
    assert pb.PreStartContainerRequest(devices_ids=["d"]).devices_ids == ["d"]
    assert pb.ContainerPreferredAllocationResponse(deviceIDs=["d"]).deviceIDs == ["d"]


def test_known_wire_bytes() -> None:
    """A Device with ID "a" and health "Healthy" encodes as the proto3 spec says.

    Field 1, wire type 2 -> tag 0x0a, length 1, 'a'; field 2 -> tag 0x12, length 7, 'Healthy'.
    """
    assert pb.Device(ID="a", health="Healthy").SerializeToString() == b"\x0a\x01a\x12\x07Healthy"


def test_stubs_import_by_package_path() -> None:
    text = (API_DIR / "deviceplugin_pb2_grpc.py").read_text()
    assert "from lab02_device_plugin.api import deviceplugin_pb2" in text
    assert pb_grpc.DevicePluginServicer and pb_grpc.RegistrationStub


def _gen_protos():
    pytest.importorskip("grpc_tools")
    spec = importlib.util.spec_from_file_location("gen_protos", REPO_ROOT / "tools" / "gen_protos.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


_BLOB = re.compile(r"AddSerializedFile\((b'.*?')\)", re.S)


def test_a_changed_proto_is_noticed(tmp_path: Path) -> None:
    """The check below can fail: renumbering one field changes the generated descriptor."""
    gen = _gen_protos()
    root = tmp_path / "root"
    proto = root / "lab02_device_plugin" / "api" / "deviceplugin.proto"
    proto.parent.mkdir(parents=True)
    text = (API_DIR / "deviceplugin.proto").read_text()
    assert "int32 allocation_size = 3;" in text
    proto.write_text(text.replace("int32 allocation_size = 3;", "int32 allocation_size = 4;"))
    gen.generate(tmp_path / "out", root=root)
    changed = _BLOB.search((tmp_path / "out" / "deviceplugin_pb2.py").read_text()).group(1)
    committed = _BLOB.search((API_DIR / "deviceplugin_pb2.py").read_text()).group(1)
    assert changed != committed


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    """Regenerate the stubs from the .proto and compare with the committed files."""
    gen = _gen_protos()
    written = gen.generate(tmp_path)
    committed_grpc = (API_DIR / "deviceplugin_pb2_grpc.py").read_text()
    fresh_grpc = (tmp_path / "deviceplugin_pb2_grpc.py").read_text()
    version = re.compile(r"GRPC_GENERATED_VERSION = '([^']+)'")
    same_tools = version.search(committed_grpc).group(1) == version.search(fresh_grpc).group(1)
    if same_tools:
        for path in written:
            assert (API_DIR / path.name).read_text() == path.read_text(), (
                f"{path.name} is stale: run `python tools/gen_protos.py` and commit the result")
    else:
        # Another grpcio-tools version words the files differently; the descriptor must still
        # be byte-identical (same messages, fields and services as the .proto).
        committed_pb2 = _BLOB.search((API_DIR / "deviceplugin_pb2.py").read_text()).group(1)
        fresh_pb2 = _BLOB.search((tmp_path / "deviceplugin_pb2.py").read_text()).group(1)
        assert committed_pb2 == fresh_pb2, "the committed stubs do not match deviceplugin.proto"
