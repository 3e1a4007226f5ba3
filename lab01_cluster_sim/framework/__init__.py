"""The scheduling framework of Lab 01, as kube-scheduler's ``pkg/scheduler/framework``.

- :mod:`.interface`: the extension points a plugin may define (PreFilter, Filter, Score,
  Permit, PostFilter, the admission cycle, node lifecycle, progress), the observer hooks and
  the placement-policy contract (``framework/interface.go``);
- :mod:`.status`: what an attempt returns (``Unschedulable`` or ``UnschedulableAndUnresolvable``,
  the outcome of one try, a PreFilter's answer, a naive-mode deadlock report);
- :mod:`.queue`: queue sort, strict FIFO and FIFO-skip;
- :mod:`.noderesources`: NodeResourcesFit's filter rules and "would it fit" trials;
- :mod:`.blocked`: the memo of job shapes that found no room;
- :mod:`.runtime`: running the plugins registered at each point for one job.

The scheduling cycle that uses them is :mod:`lab01_cluster_sim.scheduler` (one floor up); the
event loop is :mod:`lab01_cluster_sim.engine`. Nothing here imports a plugin, the cycle or the
engine that drives a run.
"""
