"""The device plugin, as in NVIDIA's k8s-device-plugin (api/config/v1, internal/rm, internal/plugin).

Rooms, each importing only the ones before it: :mod:`.config` (the plugin's config file),
:mod:`.mig` (MIG profile tables and resource names), :mod:`.inventory` (the node's GPUs),
:mod:`.topology` (NUMA nodes and NVLink from ``nvidia-smi topo -m``), :mod:`.sharing`
(pure functions from inventory + config to advertised resources and allocations),
:mod:`.health` (health sources and the Xid policy), :mod:`.server` (one gRPC DevicePlugin
server per resource) and :mod:`.manager` (the servers of one node, reloads).
"""
