"""The kubelet's checks of a RegisterRequest (pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go).

The version (only ``v1beta1``), the extended resource name, then the endpoint, in the
kubelet's order and with its error texts; the Registration service itself is served by the
device manager (:mod:`lab02_device_plugin.kubelet.manager`).
"""

from __future__ import annotations

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.kubelet.pod import is_extended_resource_name
from lab02_device_plugin.limits import shorten

# Constants of k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 (constants.go).
VERSION = "v1beta1"
SUPPORTED_VERSIONS = ("v1beta1",)


def register_error(request: pb.RegisterRequest) -> str | None:
    """The kubelet's validation of a RegisterRequest, before it dials the plugin.

    Returns the kubelet's error text, or None when the request passes. Order and wording
    follow the kubelet (plugin/v1beta1/server.go ``Register``/``validateRegisterRequest``):
    version, resource name, then endpoint. The endpoint
    rule (a file name in the plugin directory) is stricter than the kubelet, which only joins
    the two paths and fails later when dialling.
    """
    if request.version not in SUPPORTED_VERSIONS:
        supported = "[" + " ".join(SUPPORTED_VERSIONS) + "]"
        return (f'requested API version "{shorten(request.version)}" is not supported by kubelet. '
                f'Supported version is "{supported}"')
    if not is_extended_resource_name(request.resource_name):
        return f'the ResourceName "{shorten(request.resource_name)}" is invalid'
    endpoint = request.endpoint
    if not endpoint or "/" in endpoint or endpoint in (".", "..") or len(endpoint) > 255:
        return (f'invalid endpoint "{shorten(endpoint)}": expected the file name of the plugin\'s '
                f"socket in the device plugin directory (e.g. nvidia-gpu.sock), not a path")
    return None
