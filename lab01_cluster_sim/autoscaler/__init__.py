"""A cluster autoscaler modelled on Karpenter.

- :mod:`.catalogue`: instance types (GPU model and count, CPU, memory, hourly price) with
  the date the prices were taken; overridable from YAML.
- :mod:`.nodepool`: NodePools (instance types, ``limits``, consolidation, ``expireAfter``,
  on-demand or spot, boot and registration delays, pre-pulled images).
- :mod:`.plugin`: the autoscaler as a node-lifecycle plugin of the one engine
  (provisioning with bin-packing, image pulls, consolidation, spot interruptions, expiry).
- :mod:`.sim`: the pod-level interface (:func:`~.sim.simulate_autoscaler`) and its result
  (cost, pending time, disruptions), computed on the engine.
- :mod:`.scenarios`: the workshop's mini-lab and a bursty demo.
"""
