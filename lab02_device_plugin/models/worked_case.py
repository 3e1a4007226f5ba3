"""Chapter 5's worked case: one 8 x H100 node, one tenant mix, every mechanism priced.

:func:`worked_case` runs the course's models for each tenant group of a :class:`WorkedCase`
(the contention models of :mod:`lab02_device_plugin.models.contention`, the MIG profiles and
their SM counts of :mod:`lab02_device_plugin.plugin.mig`, quantization waste from
:mod:`lab02_device_plugin.models.mig_partition`) and gives one :class:`Option` per way to
serve it: dollars per month, the GPU share when busy, latency against the SLO, isolation.
:func:`defended_plan` picks the plan the chapter defends, and :func:`option_rows` lays the
options out as the chapter's table. Every number of a WorkedCase is an input
(illustrative, stated on the page), not a measurement. The decision table itself (which
mechanism fits which requirements) is :mod:`lab02_device_plugin.models.decision`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.models.contention import (
    Kernel, bursty_time_slicing, kernel_timeline,
)
from lab02_device_plugin.models.decision import NBSP, percent
from lab02_device_plugin.models.mig_partition import quantization_waste
from lab02_device_plugin.plugin.mig import MigProfile, get_profile


#: Hours in an average month (8760 / 12).
HOURS_PER_MONTH = 730.0


@dataclass(frozen=True)
class WorkedCase:
    """Chapter 5's worked decision case: one 8 x H100 node and one tenant mix.

    Every number is an input (illustrative, stated on the page), not a measurement.

    Attributes:
        price_per_gpu_hour: dollars per H100-hour.
        inference_replicas: replicas of the team's inference service.
        inference_memory_gb: GPU memory one replica needs (a 7B model in FP16, about 14 GB
            of weights, plus KV cache).
        inference_request_ms: GPU time of one request alone on a whole H100.
        inference_p99_slo_ms: the service's p99 latency objective.
        inference_memory_bound: share of a request's solo time in which it saturates the
            memory bandwidth (MPS interference, MIG bandwidth share).
        notebooks: data-science notebooks.
        notebook_duty_cycle: share of time a notebook runs GPU work.
        notebook_memory_gb: GPU memory a notebook holds.
        notebook_cell_ms: GPU time of one notebook cell alone on a whole H100.
        notebooks_per_gpu: time-slicing replicas for notebooks.
        notebook_memory_bound: the same share for a notebook cell (0: compute-bound).
        regulated_memory_gb: what the regulated tenant needs ("half an H100").
        reconfigure_minutes: drain, re-create instances and restart the plugin on one GPU.
        reboot_minutes: a node reboot, when enabling MIG mode needs one (cloud VMs).
    """

    price_per_gpu_hour: float = 4.00
    inference_replicas: int = 3
    inference_memory_gb: float = 24.0
    inference_request_ms: float = 8.0
    inference_p99_slo_ms: float = 50.0
    inference_memory_bound: float = 0.3
    notebooks: int = 10
    notebook_duty_cycle: float = 0.10
    notebook_memory_gb: float = 12.0
    notebook_cell_ms: float = 200.0
    notebooks_per_gpu: int = 5
    regulated_memory_gb: float = 30.0
    reconfigure_minutes: float = 10.0
    reboot_minutes: float = 15.0
    notebook_memory_bound: float = 0.0


def mig_latency_ms(work_ms: float, profile: MigProfile, memory_bound: float = 0.0) -> float:
    """Time (ms) of a request that takes ``work_ms`` alone on the whole GPU, run alone on a
    MIG instance of ``profile``: its compute part ``1 - m`` scales with the instance's SMs,
    its memory-bound part ``m`` with its memory bandwidth (memory slices / 8),
    ``w ((1 - m) / sm_share + m / bandwidth_share)``. An H100 ``3g.40gb`` (60 of 132 SMs,
    4 of 8 memory slices), 8 ms, ``m = 0.3``: ``8 (0.7 x 2.2 + 0.3 x 2) = 17.12`` ms.

    Raises:
        InputError: ``work_ms`` not > 0 or ``memory_bound`` outside [0, 1].
    """
    if isinstance(work_ms, bool) or not isinstance(work_ms, (int, float)) \
            or not math.isfinite(work_ms) or work_ms <= 0:
        raise InputError(f"work_ms: expected a time in ms > 0, got {work_ms!r}")
    if isinstance(memory_bound, bool) or not isinstance(memory_bound, (int, float)) \
            or not 0.0 <= memory_bound <= 1.0:
        raise InputError(f"memory_bound: expected a share of run time in [0, 1], got {memory_bound!r}")
    return work_ms * ((1.0 - memory_bound) / profile.sm_share
                      + memory_bound / profile.bandwidth_share)


@dataclass(frozen=True)
class Option:
    """One way to serve one tenant group in :func:`worked_case`.

    Attributes:
        tenant: "inference", "regulated" or "notebooks".
        mechanism: how it is served, e.g. "MIG 3g.40gb".
        gpu_share: share of one GPU each tenant (pod) occupies.
        cost_per_month: dollars per tenant per month, ``gpu_share x price x 730``.
        sm_share: share of the GPU a busy tenant gets: its SMs (MIG, MPS cap), or the mean
            share of GPU time (time-slicing, while busy).
        p99_ms: latency (ms) of one request (inference) or cell (notebooks) in the model;
            what it is differs by mechanism and is said in ``measure``: one request alone
            (exclusive, MIG), all replicas busy at once (MPS, the model's worst case), a
            0.99 quantile over the neighbours' duty cycles (time-slicing), ``math.inf``
            when the time-sliced GPU is overloaded (no steady state). None where not
            modelled (the regulated tenant's workload is not given).
        memory_headroom_gb: memory the tenant may use beyond its need: its instance or
            limit minus the need; for time-slicing the GPU's memory minus the sum of all
            tenants' needs, shared.
        blast_app, blast_device: other tenants' pods reached by an application fault in
            one pod / by a GPU-wide fault (Xid 79, reset) on its GPU.
        reconfig_gpu_hours: capacity lost to change this tenant's layout once.
        meets: whether it meets the tenant's requirements.
        why: the requirement that decided ``meets``.
        measure: what ``p99_ms`` is for this option, in words ("" when None).
        statistic: the same in one or two words, shown next to the number so that
            different statistics are not ranked as one: "alone", "all busy" or "p99".
    """

    tenant: str
    mechanism: str
    gpu_share: float
    cost_per_month: float
    sm_share: float
    p99_ms: float | None
    memory_headroom_gb: float
    blast_app: int
    blast_device: int
    reconfig_gpu_hours: float
    meets: bool
    why: str
    measure: str = ""
    statistic: str = ""


def overload_reason(tenants: int, duty_cycle: float, capacity_gpus: float) -> str:
    """Why a time-sliced GPU has no steady state, in words: the offered load
    ``tenants x duty_cycle`` GPUs against the ``capacity_gpus`` a shared GPU delivers
    (:func:`lab02_device_plugin.models.contention.offered_load`)."""
    return (f"overloaded: {tenants} x {percent(duty_cycle)} = {tenants * duty_cycle:g} GPUs of work "
            f"on one GPU that delivers {capacity_gpus:.2f} while shared; no steady state, "
            f"no finite p99")


def _h100(name: str):
    return get_profile("H100-80GB", name)


def worked_case(case: WorkedCase = WorkedCase()) -> list[Option]:
    """Every candidate mechanism for each tenant group of ``case``, with the numbers the
    labs' models compute: MPS timeline (:func:`kernel_timeline`), MIG SM counts
    (:mod:`lab02_device_plugin.plugin.mig`), time-slicing with duty cycles
    (:func:`bursty_time_slicing`). Latency under MIG: :func:`mig_latency_ms` (compute
    scales with the instance's SMs, the memory-bound part with its bandwidth).

    Raises:
        InputError: a field of ``case`` out of range.
    """
    for name in ("price_per_gpu_hour", "inference_memory_gb", "inference_request_ms",
                 "inference_p99_slo_ms", "notebook_memory_gb", "notebook_cell_ms",
                 "regulated_memory_gb", "reconfigure_minutes", "reboot_minutes"):
        value = getattr(case, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise InputError(f"WorkedCase.{name}: expected a number > 0, got {value!r}")
    for name in ("inference_replicas", "notebooks", "notebooks_per_gpu"):
        value = getattr(case, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
            raise InputError(f"WorkedCase.{name}: expected a whole number in 1..64, got {value!r}")
    for name in ("inference_memory_bound", "notebook_memory_bound", "notebook_duty_cycle"):
        value = getattr(case, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0.0 <= value <= 1.0 or (name == "notebook_duty_cycle" and value == 0):
            raise InputError(f"WorkedCase.{name}: expected a share in "
                             f"{'(0, 1]' if name == 'notebook_duty_cycle' else '[0, 1]'}, "
                             f"got {value!r}")
    month = case.price_per_gpu_hour * HOURS_PER_MONTH
    gpu_gb = 80.0
    reconfig = case.reconfigure_minutes / 60.0
    opts: list[Option] = []
    n_inf = case.inference_replicas
    slo = case.inference_p99_slo_ms
    w = case.inference_request_ms
    # inference ------------------------------------------------------------------
    duty = percent(case.notebook_duty_cycle)
    opts.append(Option("inference", "exclusive GPU", 1.0, month, 1.0, w,
                       gpu_gb - case.inference_memory_gb, 0, 0, 0.0, w <= slo,
                       f"{w:g}{NBSP}ms within the {slo:g}{NBSP}ms SLO",
                       "one request alone on the whole GPU", "alone"))
    q3 = _h100("3g.40gb")
    lat = mig_latency_ms(w, q3, case.inference_memory_bound)
    opts.append(Option("inference", "MIG 3g.40gb", 0.5, 0.5 * month, q3.sm_share, lat,
                       40.0 - case.inference_memory_gb, 0, 1, reconfig, lat <= slo,
                       f"{lat:.1f}{NBSP}ms within the {slo:g}{NBSP}ms SLO, isolated",
                       "one request alone on the instance: compute on its SMs, the "
                       "memory-bound part on its bandwidth", "alone"))
    cap = 100.0 / n_inf
    t = kernel_timeline([[Kernel(w, 1.0)] for _ in range(n_inf)], mps=True,
                        active_thread_percentage=cap, memory_bound=case.inference_memory_bound)
    lat = t.makespan_ms  # all replicas busy at once: the worst case of the model
    opts.append(Option("inference", f"MPS, replicas {n_inf}", 1.0 / n_inf, month / n_inf,
                       1.0 / n_inf, lat, gpu_gb / n_inf - case.inference_memory_gb, n_inf - 1,
                       n_inf - 1, 0.0, lat <= slo,
                       f"{lat:.1f}{NBSP}ms within the SLO, but experimental and node-wide"
                       if lat <= slo else f"{lat:.1f}{NBSP}ms misses the {slo:g}{NBSP}ms SLO",
                       f"all {n_inf} replicas busy at once, each capped at "
                       f"{100 // n_inf}{NBSP}% of the SMs", "all busy"))
    per_gpu = case.notebooks_per_gpu + 1
    mixed = bursty_time_slicing(per_gpu, case.notebook_duty_cycle, w)
    lat = mixed.p99_latency_ms
    shared_left = gpu_gb - case.inference_memory_gb - case.notebooks_per_gpu * case.notebook_memory_gb
    opts.append(Option("inference", "time-sliced with notebooks", 1.0 / per_gpu, month / per_gpu,
                       mixed.mean_throughput_share,
                       lat, shared_left, per_gpu - 1, per_gpu - 1, 0.0, False,
                       (f"memory does not fit ({shared_left:g}{NBSP}GB); " if shared_left < 0 else "")
                       + (f"{lat:.1f}{NBSP}ms only while the notebooks stay at {duty}; "
                          "no isolation promised" if mixed.stable else
                          overload_reason(per_gpu, case.notebook_duty_cycle, mixed.capacity_gpus)),
                       f"p99 over the {per_gpu} tenants' duty cycles ({duty} each)", "p99"))
    # regulated tenant -------------------------------------------------------------
    need = case.regulated_memory_gb
    opts.append(Option("regulated", "exclusive GPU", 1.0, month, 1.0, None, gpu_gb - need, 0, 0,
                       0.0, True, "isolated, and all the SMs"))
    for name in ("3g.40gb", "4g.40gb"):
        prof = _h100(name)
        opts.append(Option("regulated", f"MIG {name}", 0.5, 0.5 * month, prof.sm_share, None,
                           40.0 - need, 0, 1, reconfig, 40.0 >= need,
                           f"isolated; {prof.multiprocessors} of {prof.gpu_sms} SMs "
                           f"({percent(prof.sm_share)}), not half"))
    opts.append(Option("regulated", "MPS or time-slicing", 0.5, 0.5 * month, 0.5, None,
                       gpu_gb / 2 - need, 1, 1, 0.0, False, "no fault isolation: fails the contract"))
    # notebooks ------------------------------------------------------------------------
    cell = case.notebook_cell_ms
    opts.append(Option("notebooks", "exclusive GPU", 1.0, month, 1.0, cell,
                       gpu_gb - case.notebook_memory_gb, 0, 0, 0.0, True,
                       f"idle {percent(1 - case.notebook_duty_cycle)} of the time",
                       "one cell alone on the whole GPU", "alone"))
    k = case.notebooks_per_gpu
    ts = bursty_time_slicing(k, case.notebook_duty_cycle, cell)
    headroom = gpu_gb - k * case.notebook_memory_gb
    if not ts.stable:
        why = overload_reason(k, case.notebook_duty_cycle, ts.capacity_gpus)
    elif headroom >= 0:
        why = f"alone {percent(ts.p_alone)} of the time; memory sum fits"
    else:
        why = "the notebooks' memory does not fit"
    opts.append(Option("notebooks", f"time-slicing, replicas {k}", 1.0 / k, month / k,
                       ts.mean_throughput_share, ts.p99_latency_ms, headroom, k - 1, k - 1, 0.0,
                       headroom >= 0 and ts.stable, why,
                       f"p99 over the {k} notebooks' duty cycles ({duty} each)", "p99"))
    waste = quantization_waste("H100-80GB", case.notebook_memory_gb, 0.0)
    fit = waste.profile
    per = fit.max_instances
    opts.append(Option("notebooks", f"MIG {fit.name}", 1.0 / per, month / per, fit.sm_share,
                       mig_latency_ms(cell, fit, case.notebook_memory_bound),
                       waste.wasted_memory_gb, 0, per - 1, reconfig, True,
                       f"isolated, but a cell always runs on {percent(fit.sm_share)} of the SMs",
                       "one cell alone on the instance, every time", "alone"))
    return opts


#: Where the regulated tenant of :func:`defended_plan` may sit: a MIG instance next to
#: another tenant's instance on the same GPU, a GPU of its own on the shared node, or a
#: node of its own in a separate pool.
REGULATED_PLACEMENTS = ("instance", "gpu", "node")

#: A GPU of :func:`defended_plan` given whole to one tenant: MIG disabled on it, so the
#: device plugin advertises it as ``nvidia.com/gpu`` (not time-sliced by the plan's config).
WHOLE_GPU = "whole GPU, MIG disabled"


@dataclass(frozen=True)
class Plan:
    """The defended layout of :func:`defended_plan` on one 8 x H100 node.

    Attributes:
        gpus: per GPU index, what it holds.
        gpus_used: GPUs the tenant groups occupy on this node.
        dedicated_gpus: GPUs the same tenants would need with one GPU each.
        monthly_cost: dollars per month for ``gpus_used + elsewhere_gpus`` GPUs.
        dedicated_monthly_cost: dollars per month for ``dedicated_gpus``.
        plugin_config: the NVIDIA device plugin config for the node (YAML text).
        mig_config: the custom mig-parted config the node's ``nvidia.com/mig.config``
            label names (YAML text).
        reboot_gpu_hours: capacity lost if enabling MIG mode needs a node reboot.
        regulated: where the regulated tenant sits (:data:`REGULATED_PLACEMENTS`).
        elsewhere_gpus: GPUs paid for outside this node (the regulated tenant's own node).
        idle_gpus: GPU capacity paid for and left empty on the GPUs used, in GPUs (a MIG
            GPU with 4 of 8 memory slices in use leaves 0.5).
        regulated_price_per_month: what the regulated tenant costs if it is charged for
            all it occupies (half a GPU beside another tenant, a whole GPU alone).
    """

    gpus: tuple[str, ...]
    gpus_used: int
    dedicated_gpus: int
    monthly_cost: float
    dedicated_monthly_cost: float
    plugin_config: str
    mig_config: str
    reboot_gpu_hours: float
    regulated: str = "instance"
    elsewhere_gpus: int = 0
    idle_gpus: float = 0.0
    regulated_price_per_month: float = 0.0


def defended_plan(case: WorkedCase = WorkedCase(), regulated: str = "instance") -> Plan:
    """The layout chapter 5 defends for ``case`` on one 8 x H100 node (mixed MIG strategy):
    inference replicas on 3g.40gb instances, two per GPU, the regulated tenant on a 4g.40gb,
    notebooks time-sliced on 7g.80gb instances (the plugin time-slices mixed-strategy MIG
    resources, so whole-GPU resources on the node stay unshared).

    ``regulated`` places the regulated tenant: ``"instance"``, a 4g.40gb beside an
    inference 3g.40gb on one GPU (the default); ``"gpu"``, a GPU of this node to itself,
    which it pays for whole and so gets whole: MIG disabled on that GPU in the mig-parted
    config, all its SMs and memory (a 4g.40gb alone would leave half the GPU it pays for
    empty); ``"node"``, a node of its own elsewhere (one more GPU, outside this node's
    layout).

    Raises:
        InputError: a field of ``case`` out of range, an unknown ``regulated``, or a tenant
            mix that does not fit one node this way.
    """
    worked_case(case)  # validates
    if regulated not in REGULATED_PLACEMENTS:
        raise InputError(f"regulated: expected one of {', '.join(REGULATED_PLACEMENTS)}, "
                         f"got {regulated!r}")
    n_inf = case.inference_replicas
    nb_gpus = math.ceil(case.notebooks / case.notebooks_per_gpu)
    gpus: list[list[str]] = []
    for _ in range(n_inf):  # two 3g per GPU
        for g in gpus:
            if len(g) == 1:
                g.append("3g.40gb")
                break
        else:
            gpus.append(["3g.40gb"])
    if regulated == "instance":
        lone = [g for g in gpus if len(g) == 1]
        if lone:
            lone[0].append("4g.40gb")
        else:
            gpus.append(["4g.40gb"])
    elif regulated == "gpu":
        gpus.append([WHOLE_GPU])
    layout = [" + ".join(sorted(g, reverse=True)) for g in gpus]
    slices_used = [8 if g == [WHOLE_GPU] else
                   sum(get_profile("H100-80GB", n).memory_slices for n in g) for g in gpus]
    layout += [f"7g.80gb time-sliced x{case.notebooks_per_gpu}"] * nb_gpus
    if len(layout) > 8:
        raise InputError(f"the tenant mix needs {len(layout)} GPUs this way; the node has 8")
    used = len(layout)
    layout += ["free"] * (8 - used)
    elsewhere = 1 if regulated == "node" else 0
    dedicated = n_inf + 1 + case.notebooks
    month = case.price_per_gpu_hour * HOURS_PER_MONTH
    plugin = ("version: v1\n"
              "flags:\n"
              "  migStrategy: mixed\n"
              "sharing:\n"
              "  timeSlicing:\n"
              "    renameByDefault: true\n"
              "    failRequestsGreaterThanOne: true\n"
              "    resources:\n"
              "      - name: nvidia.com/mig-7g.80gb\n"
              f"        replicas: {case.notebooks_per_gpu}\n")
    lines = ["version: v1", "mig-configs:", "  tenants-mixed:"]
    for i, g in enumerate(layout):
        if g in ("free", WHOLE_GPU):
            continue
        lines += [f"    - devices: [{i}]", "      mig-enabled: true", "      mig-devices:"]
        counts: dict[str, int] = {}
        for part in g.split(" + "):
            name = part.split(" ")[0]
            counts[name] = counts.get(name, 0) + 1
        lines += [f'        "{name}": {n}' for name, n in counts.items()]
    no_mig = [i for i, g in enumerate(layout) if g in ("free", WHOLE_GPU)]
    if no_mig:
        lines += [f"    - devices: [{', '.join(map(str, no_mig))}]", "      mig-enabled: false"]
    idle = sum(1.0 - n / 8 for n in slices_used)
    return Plan(tuple(layout), used, dedicated, (used + elsewhere) * month, dedicated * month,
                plugin, "\n".join(lines) + "\n", 8 * case.reboot_minutes / 60.0,
                regulated=regulated, elsewhere_gpus=elsewhere, idle_gpus=idle,
                regulated_price_per_month=(0.5 if regulated == "instance" else 1.0) * month)


#: Column heads of :func:`option_rows`, in order.
OPTION_COLUMNS = ("tenant", "mechanism", "$ per month", "GPU share when busy",
                  "latency of one request (model)", "memory headroom", "blast radius",
                  "reconfiguration", "meets needs", "why", "what the latency is")


def option_rows(options: Sequence[Option]) -> list[list[str]]:
    """:func:`worked_case` options as table rows of labelled strings (no float noise), one
    cell per :data:`OPTION_COLUMNS`; numbers and units are joined by no-break spaces."""
    rows = []
    for o in options:
        rows.append([o.tenant, o.mechanism, f"${o.cost_per_month:,.0f}", percent(o.sm_share),
                     "-" if o.p99_ms is None else
                     (f"{o.p99_ms:,.1f}{NBSP}ms" if math.isfinite(o.p99_ms) else "unbounded")
                     + (f" ({o.statistic})" if o.statistic else ""),
                     f"{o.memory_headroom_gb:.1f}{NBSP}GB", f"{o.blast_app} / {o.blast_device}",
                     f"{o.reconfig_gpu_hours:.2f}{NBSP}GPU-h", "yes" if o.meets else "no", o.why,
                     o.measure or "-"])
    return rows
