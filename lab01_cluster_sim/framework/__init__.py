"""The scheduling framework of Lab 01, as kube-scheduler's ``pkg/scheduler/framework``.

- :mod:`.interface`: the extension points a plugin may define (PreFilter, Filter, Score,
  Permit, PostFilter, the admission cycle, node lifecycle, progress) and the observer hooks
  (``framework/interface.go``).

The scheduling cycle that calls them is :mod:`lab01_cluster_sim.scheduler`; the event loop is
:mod:`lab01_cluster_sim.engine`. Nothing here imports a plugin or the engine that drives a run.
"""
