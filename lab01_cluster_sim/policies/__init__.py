"""Placement policies: given a worker's request and the cluster state, score nodes.

A policy is a small object with the :class:`~lab01_cluster_sim.framework.interface.PlacementPolicy`
shape (the Score extension point), one module per family. The registry
(:data:`lab01_cluster_sim.registry.POLICIES`) lists each policy by its name (the word used on the
command line, in tables and in errors), written out by hand as kube-scheduler's in-tree registry
lists its plugins: a new policy is one new module and one new entry there, and the engine is
untouched. Build one by name with :func:`lab01_cluster_sim.registry.make_policy`.

Built in (the FGD paper's ones as pkg/simulator/plugin/ of hkust-adsl/kubernetes-scheduler-simulator scores):

- ``first-fit``, ``best-fit``, ``worst-fit``, ``random`` (:mod:`.generic`);
- the FGD paper's baselines ``dot-prod`` (:mod:`.dot_prod`), ``gpu-packing``
  (:mod:`.gpu_packing`), ``gpu-clustering`` (:mod:`.gpu_clustering`); its Random and BestFit
  are ``random`` and ``best-fit``;
- ``fgd``, Fragmentation Gradient Descent (:mod:`.fgd`), which needs the target workload.

:mod:`.base` holds the pipeline they share (filter -> score -> select -> pick, :func:`.base.place`)
and the GPU picks inside a node; :mod:`.gpu_pick` the pack-or-spread GPU choice as an option.
"""
