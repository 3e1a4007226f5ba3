"""A registered device plugin as the kubelet holds it (pkg/kubelet/cm/devicemanager/endpoint.go).

An :class:`Endpoint` is one plugin's connection (channel, stub, options) and the latest
ListAndWatch snapshot; the functions word gRPC errors as the kubelet's messages show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.limits import MAX_MESSAGE_CHARS, shorten

# Health strings of k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 (constants.go).
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"


@dataclass
class Endpoint:
    """A registered plugin: its channel, options and the latest ListAndWatch snapshot."""

    resource: str
    socket_path: str
    channel: grpc.Channel | None
    stub: pb_grpc.DevicePluginStub | None
    options: pb.DevicePluginOptions
    devices: dict[str, str] = field(default_factory=dict)  # ID -> health
    numa: dict[str, int] = field(default_factory=dict)  # ID -> NUMA node
    stream: object | None = None
    stopped_at: float | None = None
    snapshots: int = 0

    @property
    def healthy(self) -> list[str]:
        """IDs of the devices whose health is ``"Healthy"``, in snapshot order."""
        return [d for d, h in self.devices.items() if h == HEALTHY]

    def close(self) -> None:
        """Cancel the ListAndWatch stream and close the channel (each when there is one)."""
        stream = self.stream
        if stream is not None:
            stream.cancel()
        if self.channel is not None:
            self.channel.close()


def stream_end_reason(exc: grpc.RpcError) -> str:
    """Why a ListAndWatch stream ended, in words (the gRPC code kept for the curious)."""
    code = exc.code() if hasattr(exc, "code") else None
    if code == grpc.StatusCode.CANCELLED:
        return "cancelled"
    if code == grpc.StatusCode.UNAVAILABLE:
        return "the plugin's socket closed: UNAVAILABLE"
    return rpc_text(exc)


def rpc_text(exc: grpc.RpcError) -> str:
    """``CODE: details`` of a gRPC error, details shortened."""
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"{code.name if code else 'UNKNOWN'}: {shorten(details or '', MAX_MESSAGE_CHARS)}"


def rpc_error_go(exc: grpc.RpcError) -> str:
    """A gRPC error worded as Go's status.Error prints it (what the kubelet's message shows)."""
    code = exc.code() if hasattr(exc, "code") else None
    name = "".join(p.capitalize() for p in code.name.split("_")) if code else "Unknown"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"rpc error: code = {name} desc = {shorten(details or '', MAX_MESSAGE_CHARS)}"
