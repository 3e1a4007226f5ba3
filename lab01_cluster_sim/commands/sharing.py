"""``python -m lab01_cluster_sim sharing``: GPU sharing modes as the scheduler sees them."""

from __future__ import annotations

import argparse
import math

from lab01_cluster_sim.errors import InputError

NAME = "sharing"
HELP = "time-slicing, MPS and MIG as the scheduler sees them: advertised resources, slowdown, MIG quantization"
DESCRIPTION = """\
For --jobs identical small jobs (--job-memory-gb, --job-compute = share of the SMs they
need) on one GPU, prints what a node advertises under each mode (exclusive, time-slicing
replicas, MPS replicas, MIG profiles), how many jobs share the GPU, their slowdown, whether
memory is isolated, and the memory wasted.

Time-slicing: n co-located compute-bound jobs each run n x (slice + switch) / slice times
longer (--slice-ms, --switch-us: assumptions, documented in lab01_cluster_sim.sharing_modes).
MPS: each replica gets 100/n % of the SMs and 1/n of the memory. MIG: each job is rounded
up to the smallest profile covering it (quantization waste); the node advertises
nvidia.com/mig-<profile>: <count>.

--layout prints the resources one MIG layout advertises (and refuses an impossible one);
--requests MEM:COMPUTE,... prints the quantization of a set of requests.

--tenancy prints the tenancy tiers (premium, standard, free) with the sharing mechanism
each is sold with, then places paying and free-tier half-GPU jobs on a 2-GPU node with
and without the constraint "a free-tier job never shares a physical GPU with a paying
tenant" and lists the GPUs where the constraint would be broken; then shows that with the
usual GPU-node taint (and the toleration GPU pods get automatically) a CPU-only pod lands
on the CPU node instead of the GPU node.

examples:
  python -m lab01_cluster_sim sharing
  python -m lab01_cluster_sim sharing --gpu H100-80GB \\
      --layout 3g.40gb,2g.20gb,1g.10gb,1g.10gb
  python -m lab01_cluster_sim sharing --gpu A100-80GB \\
      --requests 6:0.125,25:0.3,12:0.2
  python -m lab01_cluster_sim sharing --tenancy --plot sharing.png
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.options import nonnegative_float, positive_float, positive_int
    from lab01_cluster_sim.sharing_modes import MIG_PROFILES

    parser.add_argument("--gpu", default="A100-80GB", choices=sorted(MIG_PROFILES), help="GPU model (default %(default)s)")
    parser.add_argument("--jobs", type=positive_int(max_value=10_000), default=4, help="identical small jobs (default %(default)s)")
    parser.add_argument("--job-memory-gb", type=positive_float(), default=15.0, help="memory per job, GB (default %(default)s)")
    parser.add_argument("--job-compute", type=positive_float(max_value=1.0), default=0.25, help="share of the SMs per job (default %(default)s)")
    parser.add_argument("--slice-ms", type=positive_float(), default=2.0, help="time-slice length, ms (assumed; default %(default)s)")
    parser.add_argument("--switch-us", type=nonnegative_float(), default=50.0, help="context-switch cost, us (assumed; default %(default)s)")
    parser.add_argument("--layout", help="comma-separated MIG profiles of one GPU, e.g. 3g.40gb,3g.40gb")
    parser.add_argument("--requests", help="comma-separated MEM_GB:COMPUTE_SHARE requests to round up to MIG profiles")
    parser.add_argument("--tenancy", action="store_true",
                        help="also show tenancy tiers: tier -> mechanism, and a free-tier/paying placement with and "
                             "without the constraint")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    parser.add_argument("--plot", metavar="FILE", help="save the sharing-modes figure")


def _memory_gb(gpu: str) -> int:
    from lab01_cluster_sim.sharing_modes import MIG_PROFILES

    return max(p.memory_gb for p in MIG_PROFILES[gpu].values())


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.sharing_modes import MigLayout, TimeSlicingParams, compare_sharing_modes, quantization_waste
    from lab01_cluster_sim.sweep import format_rows

    if args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    if not 0 < args.job_compute <= 1:
        raise InputError(f"--job-compute must be in (0, 1], got {args.job_compute}")
    if args.plot:
        from lab01_cluster_sim.plots.dashboard import check_figure_path

        check_figure_path(args.plot, "--plot")
    reqs = []
    if args.requests:
        for item in args.requests.split(","):
            try:
                mem, comp = (float(x) for x in item.split(":"))
            except ValueError:
                raise InputError(f"--requests item {item!r}: expected MEM_GB:COMPUTE_SHARE, e.g. 10:0.25") from None
            if not (0 < mem < math.inf and 0 < comp <= 1):
                raise InputError(f"--requests item {item!r}: expected memory > 0 GB and a compute share in (0, 1]")
            reqs.append((mem, comp))
    layout = None
    if args.layout is not None:   # checked before anything is printed: a bad layout gives one error line only
        profiles = tuple(p.strip() for p in args.layout.split(","))
        if not any(profiles):
            raise InputError(f"--layout {args.layout!r}: expected comma-separated MIG profiles, e.g. 3g.40gb,3g.40gb")
        if not all(profiles):      # '3g.40gb,,2g.20gb': an item lost in an edit, not skipped silently
            raise InputError(f"--layout {args.layout!r}: item {profiles.index('') + 1} is empty; expected "
                             "comma-separated MIG profiles, e.g. 3g.40gb,3g.40gb")
        try:
            layout = MigLayout(args.gpu, profiles)
        except InputError as exc:
            # the message names the layout again ("MIG layout 7g.80gb,1g.10gb does not fit..."): once is enough
            msg = str(exc).removeprefix(f"MIG layout {','.join(profiles)} ")
            raise InputError(f"--layout {args.layout!r}: {msg}") from None
    rows = compare_sharing_modes(args.gpu, _memory_gb(args.gpu), args.jobs, args.job_memory_gb, args.job_compute,
                                 TimeSlicingParams(args.slice_ms, args.switch_us))
    table = [{"mode": r.mode, "advertised": ", ".join(f"{k}: {v}" for k, v in r.advertised.items()),
              "jobs_on_gpu": r.jobs_on_gpu, "jobs_waiting": r.jobs_waiting, "jobs_failed": r.jobs_failed,
              "slowdown": r.slowdown, "memory_isolated": r.memory_isolated, "memory_waste": r.memory_waste,
              "note": r.note or "-"}
             for r in rows]
    print(format_rows(table, args.format, units={"memory_waste": "ratio", "jobs_on_gpu": "count",
                                                 "jobs_waiting": "count", "jobs_failed": "count"}), end="")
    if args.format == "table":
        print(f"{args.jobs} jobs asked for: jobs_on_gpu + jobs_waiting = {args.jobs} in every row.\n"
              "jobs_failed: bound jobs that fail for lack of memory (out of memory under\n"
              "time-slicing, over the per-client limit under MPS).")
    if layout is not None:
        print(f"\nMIG layout on {args.gpu}: " + ", ".join(f"{k}: {v}" for k, v in layout.advertised().items()))
    if args.requests:
        q = quantization_waste(args.gpu, reqs)
        print(f"\nquantization on {args.gpu}: profiles {', '.join(q.profiles)}; memory asked {q.asked_memory_gb:g} GB, "
              f"granted {q.granted_memory_gb:g} GB (waste {q.memory_waste:.0%}); compute asked {q.asked_compute:.3g}, "
              f"granted {q.granted_compute:.3g} GPUs (waste {q.compute_waste:.0%})")
    if args.tenancy:
        _tenancy_demo(args.format)
    if args.plot:
        from lab01_cluster_sim.plots.dashboard import sharing_modes_figure

        from lab01_cluster_sim.progress import wrote

        sharing_modes_figure(rows).savefig(args.plot, dpi=120)
        wrote(args.plot, "sharing-modes figure")
    return 0


def _tenancy_demo(fmt: str) -> None:
    import math

    from lab01_cluster_sim.model import Job, Node
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.simulate import Simulation
    from lab01_cluster_sim.sweep import format_rows
    from lab01_cluster_sim.tenancy import TIER_MECHANISM, TenancyPlacer, Tier, tenancy_violations

    print()
    print(format_rows([{"tier": t.value, "paying": t.paying, "mechanism": m} for t, m in TIER_MECHANISM.items()], fmt),
          end="")
    tiers = {"acme": Tier.STANDARD, "student": Tier.FREE}   # premium would take whole GPUs
    half = dict(gpus_per_worker=1, gpu_milli=500)
    jobs = [Job("acme-1", 0, 100, tenant="acme", **half), Job("student-1", 1, 100, tenant="student", **half),
            Job("acme-2", 2, 100, tenant="acme", **half), Job("student-2", 3, 100, tenant="student", **half)]
    node = [Node("gpu-node", "A100", 2, 64000, 512000)]
    placer = TenancyPlacer(tiers)

    def at_ten(cluster, work, *plugins):
        """The simulation after the events at t = 10 s: who runs where."""
        sim = Simulation(cluster, work, MostAllocated(), "gang", "fifo-skip", plugins=plugins)
        sim.run(until=math.nextafter(10.0, math.inf))
        return sim

    for label, plugins in (("best-fit, no constraint", ()), ("tenancy constraint", (placer,))):
        sim = at_ten(node, jobs, *plugins)
        running = sim.scheduler.running
        where = ", ".join(f"{i}->GPU{running[i].placements[0].gpus[0]}" for i in sorted(running))
        bad = tenancy_violations(sim, placer)
        print(f"\n{label}: {where}; GPUs shared by free and paying tenants: "
              + (", ".join(f"{n} GPU{g} {list(ids)}" for n, g, ids in bad) if bad else "none"))
    # taints and tolerations: a GPU pod fills the GPU node's GPUs, then a CPU-only pod arrives;
    # best-fit (fullest node first) would put it on the GPU node, using CPU the GPUs need
    from lab01_cluster_sim.tenancy import GpuNodeTaint

    cluster = [Node("gpu-node", "A100", 2, 64000, 512000, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
               Node("cpu-node", "", 0, 64000, 512000)]
    pods = [Job("gpu-pod", 0, 100, gpus_per_worker=2, gpu_milli=1000, cpu_milli=1000, memory_mib=1024),
            Job("cpu-pod", 1, 100, cpu_milli=1000, memory_mib=1024)]
    for label, plugins in (("no taints", ()),
                           ("GPU node tainted nvidia.com/gpu=present:NoSchedule", (GpuNodeTaint(),))):
        running = at_ten(cluster, pods, *plugins).scheduler.running
        where = ", ".join(f"{i}->{cluster[running[i].placements[0].node_index].name}" for i in sorted(running))
        print(f"{label}: {where}")
