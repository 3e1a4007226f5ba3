"""Studies: ready-made experiments that run the engine and tabulate what the book shows.

Each builds :class:`lab01_cluster_sim.simulate.Simulation` runs with plugins and returns rows
(one layer above the engine, below the commands and the chapters that print them):
:mod:`.trilemma` (queue disciplines: wait, utilisation, fairness), :mod:`.autoscaling` (the
workshop's mini-lab and a bursty demo), :mod:`.sharing` (MIG pools over time),
:mod:`.topology` (bounded wait versus slowdown), :mod:`.defrag` (shape-aware admission,
migration, the fragmentation dashboard's series).
"""
