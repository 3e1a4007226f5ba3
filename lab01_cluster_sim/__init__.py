"""Lab 01: a discrete-event GPU cluster scheduling simulator.

It replays the Alibaba GPU cluster trace of 2023 (the ``openb`` trace of Weng et al.,
"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC '23) or a seeded synthetic workload, and compares placement
policies, gang versus naive placement, queue disciplines, topology and autoscaling.

Units everywhere: time in seconds, CPU in milli-cores, memory in MiB, GPU share in
milli-GPU (1000 = one whole GPU), as in the trace.
"""

__version__ = "0.1.0"
