"""A cluster autoscaler modelled on Karpenter.

- :mod:`.catalogue`: instance types (GPU model and count, CPU, memory, hourly price) with
  the date the prices were taken; overridable from YAML.
- :mod:`.nodepool`: NodePools (instance types, ``limits``, consolidation, ``expireAfter``,
  on-demand or spot, boot and registration delays, pre-pulled images).
- :mod:`.sim`: the event-driven simulation (provisioning, image pulls, consolidation,
  spot interruptions, expiry) and its result (cost, pending time, disruptions).
- :mod:`.scenarios`: the workshop's mini-lab and a bursty demo.
"""
