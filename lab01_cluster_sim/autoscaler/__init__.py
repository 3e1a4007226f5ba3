"""A cluster autoscaler modelled on Karpenter.

- :mod:`.catalogue`: instance types (GPU model and count, CPU, memory, hourly price) with
  the date the prices were taken; overridable from YAML.
- :mod:`.nodepool`: NodePools (instance types, ``limits``, consolidation, ``expireAfter``,
  on-demand or spot, boot and registration delays, pre-pulled images).
- :mod:`.plugin`: the autoscaler as a node-lifecycle plugin of the one engine
  (provisioning with bin-packing, image pulls, consolidation, spot interruptions, expiry).
- :mod:`.pods`: the pod-level view: pods and fixed nodes as the engine's jobs and nodes, and
  the ``pod-tracker`` plugin that reports per pod (cost, pending time, disruptions).

The workshop's mini-lab and a bursty demo are studies (:mod:`lab01_cluster_sim.studies.autoscaling`).
"""
