"""The kubelet's side of the device plugin API: a faithful mock of its device manager.

Shaped like the kubelet's ``pkg/kubelet/cm/devicemanager``: :mod:`.manager` holds
:class:`~lab02_device_plugin.kubelet.manager.MockKubelet`. It talks to device plugins only
over gRPC, with the message types of :mod:`lab02_device_plugin.api`.
"""
