"""``python -m lab01_cluster_sim autoscale``: a Karpenter-style autoscaler on GPU pods."""

from __future__ import annotations

import argparse
import math

from lab01_cluster_sim.errors import InputError

NAME = "autoscale"
HELP = "Karpenter-style autoscaling of GPU nodes: provisioning, image pulls, consolidation, spot, expireAfter, cost"
DESCRIPTION = """\
Pods that fit no node make the autoscaler launch the cheapest instance type that fits them
(default catalogue: common AWS/GCP GPU instances with approximate on-demand list prices,
dated; --catalogue FILE.yaml to use your own). A node is usable after --boot + --registration
seconds; a pod then waits for its image (size / --pull-mib-per-s + size / --extract-mib-per-s)
unless --prepull. Pods time-sliced on one card share its time (each slows down).
Consolidation (--consolidation WhenEmpty | WhenEmptyOrUnderutilized | Never, after
--consolidate-after s), spot capacity (--spot, interruptions at --spot-rate per node-hour
with a 2-minute notice, --min-available pods per workload kept where possible),
--expire-after node rotation and a --limit-gpus NodePool limit are modelled.

Scenarios:
  mini-lab  the workshop's mini-lab: a 1-GPU node time-sliced to --replicas replicas,
            --pods pods of one GPU each; the extra pods make the autoscaler launch an
            unsliced node and run there after the boot delay
  burst     a seeded burst of --pods pods of 1, 4 or 8 GPUs (see lab01_cluster_sim.studies.autoscaling)

Prints per node (type, launch, ready, termination and why, $) and per pod (node, bound,
started, finished, disruptions) for mini-lab, and the summary: cost in dollars, pending
time, disruptions per workload.

examples:
  python -m lab01_cluster_sim autoscale
  python -m lab01_cluster_sim autoscale --scenario mini-lab --prepull
  python -m lab01_cluster_sim autoscale --scenario burst --pods 80 --spot \\
      --spot-rate 0.5 --plot scale.png
  python -m lab01_cluster_sim autoscale --scenario burst \\
      --consolidation WhenEmptyOrUnderutilized --limit-gpus 32
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.autoscaler.nodepool import CONSOLIDATION_POLICIES
    from lab01_cluster_sim.autoscaler.plugin import MAX_NODES
    from lab01_cluster_sim.commands._options import (nonnegative_float, nonnegative_int, positive_float,
                                                     positive_int, seed)

    parser.add_argument("--scenario", default="mini-lab", choices=("mini-lab", "burst"), help="default %(default)s")
    parser.add_argument("--pods", type=positive_int(max_value=100_000), default=None, help="pods (default: 5 for mini-lab, 60 for burst)")
    parser.add_argument("--replicas", type=positive_int(max_value=1000), default=4, help="mini-lab: time-slicing replicas of the static GPU")
    parser.add_argument("--duration", type=nonnegative_float(), default=600.0, help="mini-lab: pod run time, s (default %(default)s)")
    parser.add_argument("--seed", type=seed, default=0, help="burst: seed (default %(default)s)")
    parser.add_argument("--catalogue", metavar="FILE", help="YAML list of instance types (default: built-in catalogue)")
    parser.add_argument("--boot", type=nonnegative_float(), default=60.0, help="boot delay, s (default %(default)s)")
    parser.add_argument("--registration", type=nonnegative_float(), default=15.0,
                        help="device plugin registration delay, s (default %(default)s)")
    parser.add_argument("--pull-mib-per-s", type=positive_float(), default=128.0, help="image pull bandwidth (default %(default)s)")
    parser.add_argument("--extract-mib-per-s", type=positive_float(), default=256.0,
                        help="image layer extraction rate, MiB/s (assumed; default %(default)s)")
    parser.add_argument("--prepull", action="store_true", help="images pre-pulled on new nodes (DaemonSet / baked image)")
    parser.add_argument("--consolidation", default="WhenEmpty", choices=CONSOLIDATION_POLICIES)
    parser.add_argument("--consolidate-after", type=nonnegative_float(), default=30.0, help="consolidateAfter, s (default %(default)s)")
    parser.add_argument("--expire-after", type=positive_float(), default=math.inf,
                        help="expireAfter, s; must exceed --boot + --registration (default: never)")
    parser.add_argument("--limit-gpus", type=nonnegative_float(), default=math.inf, help="NodePool limit on GPUs (default: none)")
    parser.add_argument("--spot", action="store_true", help="launch spot capacity")
    parser.add_argument("--spot-rate", type=nonnegative_float(max_value=3600.0), default=0.0, help="spot interruptions per node-hour (default 0)")
    parser.add_argument("--min-available", type=nonnegative_int(), default=0, help="pods per workload kept running on voluntary disruption")
    parser.add_argument("--until", type=positive_float(), default=7 * 86400.0, help="stop after this simulated time, s (default 7 days)")
    parser.add_argument("--max-nodes", type=positive_int(max_value=100_000), default=MAX_NODES,
                        help="stop with an error if more nodes than this would be launched (default %(default)s)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    parser.add_argument("--plot", metavar="FILE", help="save the nodes/pending/cost figure")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE, PRICES_AS_OF, load_catalogue
    from lab01_cluster_sim.autoscaler.nodepool import NodePool
    from lab01_cluster_sim.studies.autoscaling import MINI_LAB_IMAGE, burst_pods, one_gpu_types
    from lab01_cluster_sim.autoscaler.plugin import Autoscaler
    from lab01_cluster_sim.autoscaler.pods import MAX_EVENTS, Pod, PodTracker, StaticNode, pod_jobs, static_nodes
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.sharing_modes import TimeSlicing, TimeSlicingParams
    from lab01_cluster_sim.simulate import Simulation
    from lab01_cluster_sim.sweep import format_rows

    if args.plot:
        from lab01_cluster_sim.plots.dashboard import check_figure_path

        check_figure_path(args.plot, "--plot")
    if args.expire_after <= args.boot + args.registration:
        raise InputError(f"--expire-after must exceed --boot + --registration = {args.boot + args.registration:g} s "
                         f"(a node would expire before it is ready and never run a pod), got {args.expire_after:g}")
    catalogue = load_catalogue(args.catalogue) if args.catalogue else DEFAULT_CATALOGUE
    capacity = "spot" if args.spot else "on-demand"
    common = dict(consolidation_policy=args.consolidation, consolidate_after_s=args.consolidate_after,
                  expire_after_s=args.expire_after, capacity_type=capacity, boot_delay_s=args.boot,
                  registration_delay_s=args.registration, pull_mib_per_s=args.pull_mib_per_s,
                  extract_mib_per_s=args.extract_mib_per_s,
                  limit_gpus=args.limit_gpus)
    if args.scenario == "mini-lab":
        n = 5 if args.pods is None else args.pods
        if n < 1 or args.replicas < 1:
            raise InputError("--pods and --replicas must be >= 1")
        types = one_gpu_types(catalogue)
        if not types:
            raise InputError("--catalogue: the mini-lab needs at least one 1-GPU instance type")
        pool = NodePool("gpu-default", types, prepulled_images=(MINI_LAB_IMAGE,) if args.prepull else (), **common)
        static = [StaticNode("gpu-node-1", "T4", 1, timeslice_replicas=args.replicas,
                             cached_images=(MINI_LAB_IMAGE,), pull_mib_per_s=args.pull_mib_per_s,
                             extract_mib_per_s=args.extract_mib_per_s)]
        pods = [Pod(f"pod-{i + 1}", 1, args.duration, 0.0, "mini-lab", 500, 1024, MINI_LAB_IMAGE, 1.0)
                for i in range(n)]
    else:
        pods = burst_pods(args.seed, 60 if args.pods is None else args.pods)
        pool = NodePool("gpu-default", tuple(catalogue),
                        prepulled_images=("trainer:v1", "llm-server:v2") if args.prepull else (), **common)
        static = []
    cluster, fleet = static_nodes(static)
    scaler = Autoscaler([pool], fleet, min_available={p.workload: args.min_available for p in pods},
                        spot_interruption_rate_per_hour=args.spot_rate, rng=np.random.default_rng(args.seed),
                        max_nodes=args.max_nodes, max_events=MAX_EVENTS)
    tracker = PodTracker(pods, scaler)
    Simulation(cluster, pod_jobs(pods), MostAllocated(), "gang", "fifo-skip",
               plugins=[scaler, TimeSlicing(TimeSlicingParams()), tracker]).run(until=math.nextafter(args.until, math.inf))
    res = tracker.result()
    print(f"instance prices: approximate list prices as of {PRICES_AS_OF} (see lab01_cluster_sim.autoscaler.catalogue)"
          if not args.catalogue else f"instance prices from {args.catalogue}")
    nodes = [{"node": n.name, "type": n.instance_type, "capacity": n.capacity_type, "launched_s": n.launched_s,
              "ready_s": n.ready_s, "terminated_s": n.terminated_s, "why": n.termination_reason,
              "dollars": n.hours(res.end_s) * n.price_per_hour} for n in res.nodes]
    print(format_rows(nodes, args.format), end="")
    if args.scenario == "mini-lab":
        prow = [{"pod": r.pod.name, "node": r.ran_on, "bound_s": r.bound_s if r.bound_s is not None else r.first_bound_s,
                 "started_s": r.started_s, "finished_s": r.finished_s, "disruptions": r.disruptions}
                for r in res.pods.values()]
        print()
        print(format_rows(prow, args.format), end="")
    summary = res.summary()
    print()
    print(format_rows([{**summary, **{f"disruptions[{k}]": v for k, v in res.disruptions_by_workload().items()}}],
                      args.format), end="")
    if args.plot:
        from lab01_cluster_sim.plots.autoscaler import autoscaler_figure

        from lab01_cluster_sim.commands._progress import wrote

        autoscaler_figure(res).savefig(args.plot, dpi=120)
        wrote(args.plot, "autoscaler figure")
    return 0
