"""Lab 02: a Kubernetes device plugin for NVIDIA GPUs and a mock kubelet that drives it.

The plugin speaks the kubelet's device plugin API v1beta1 over gRPC on unix sockets
(wire-compatible with a real kubelet), reads NVIDIA k8s-device-plugin config files
(time-slicing and MPS replicas, MIG strategies), and takes its GPUs from an
``nvidia-smi -q -x`` dump, a YAML spec of simulated GPUs, or live NVML.
"""

__version__ = "0.1.0"
