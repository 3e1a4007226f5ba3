"""The kubelet's side of the device plugin API: a faithful mock, shaped like the kubelet's own.

Modules, each importing only the ones before it, as in ``pkg/kubelet/cm/devicemanager``:
:mod:`.pod` (pods, names, quantities, the API server's checks), :mod:`.registration`
(RegisterRequest checks, ``plugin/v1beta1/server.go``), :mod:`.endpoint` (a registered
plugin, ``endpoint.go``), :mod:`.pod_devices` (who holds which device, ``pod_devices.go``),
:mod:`.checkpoint` (``checkpoint/``), :mod:`.manager` (the device manager, ``manager.go``)
and :mod:`.lifecycle` (:class:`~lab02_device_plugin.kubelet.lifecycle.MockKubelet`: the
device manager plus pod admission, restarts and phases). It reaches device plugins only over
gRPC, with the message types of :mod:`lab02_device_plugin.api`.
"""
