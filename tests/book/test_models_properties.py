"""Physical invariants of the models the book's part 1 calls, as hypothesis properties.

Time-slicing and MPS (lab02_device_plugin.models.contention), MIG arithmetic
(lab02_device_plugin.plugin.mig and models.mig_partition, against Lab 01's own profile table),
the worked case (lab02_device_plugin.models.worked_case), the
economics of idle capacity (lab01_cluster_sim.economics), and the one quantity two models
compute: the time-slicing closed form against Lab 01's simulator with its time-slicing
plugin on the same inputs. A test may import both labs; the packages do not import each
other. Every property is derandomized: the same examples on every machine.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab01_cluster_sim import economics
from lab01_cluster_sim.model import Job
from lab01_cluster_sim.sharing_modes import (MIG_PROFILES, TimeSlicing, TimeSlicingParams,
                                             timeslice_slowdown, timesliced_node)
from lab01_cluster_sim.simulate import Simulation
from lab02_device_plugin.models.contention import (Kernel, bursty_latency_quantile,
                                                   bursty_time_slicing, kernel_timeline,
                                                   latency_quantile, max_stable_tenants,
                                                   max_tenants_within, offered_load, time_slicing)
from lab02_device_plugin.models.mig_partition import quantization_waste
from lab02_device_plugin.models.worked_case import (HOURS_PER_MONTH, WorkedCase, defended_plan,
                                                    mig_latency_ms, worked_case)
from lab02_device_plugin.plugin import mig

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)

tenants = st.integers(min_value=1, max_value=12)
duty = st.floats(min_value=0.01, max_value=1.0)
work = st.floats(min_value=0.1, max_value=50.0)
slice_ms = st.sampled_from([0.5, 1.0, 2.0, 4.0])
switch_ms = st.sampled_from([0.0, 0.05, 0.1, 0.5])


# --------------------------------------------------------------------- time-slicing, all busy

@SETTINGS
@given(n=tenants, w=work, s=slice_ms, c=switch_ms)
def test_all_busy_utilization_at_most_one(n, w, s, c):
    r = time_slicing(n, w, s, c)
    assert 0 < r.throughput_share <= 1
    # n tenants together use the GPU's useful time, s/(s+c) of it while shared, never more
    assert n * r.throughput_share == pytest.approx(1.0 if n == 1 else s / (s + c))
    assert w <= r.p50_latency_ms <= r.p99_latency_ms


@SETTINGS
@given(n=tenants, w=work, s=slice_ms, c=switch_ms, q=st.floats(0, 1))
def test_all_busy_latency_non_decreasing_in_tenants_and_work(n, w, s, c, q):
    assert latency_quantile(n + 1, w, q, s, c) >= latency_quantile(n, w, q, s, c) - 1e-9
    assert latency_quantile(n, w + 1.0, q, s, c) >= latency_quantile(n, w, q, s, c) - 1e-9


# --------------------------------------------------------------------- time-slicing, bursty

@SETTINGS
@given(n=tenants, p0=duty, s=slice_ms, c=switch_ms)
def test_stability_condition_is_offered_load_below_capacity(n, p0, s, c):
    load = offered_load(n, p0, s, c)
    capacity = 1.0 if n == 1 else s / (s + c)
    assert load.offered_gpus == pytest.approx(n * p0)
    assert load.capacity_gpus == pytest.approx(capacity)
    if n == 1:
        assert load.stable
    else:
        assert load.stable == (n * p0 < capacity * (1 - 1e-12))
    r = bursty_time_slicing(n, p0, 5.0, s, c)
    assert r.stable == load.stable
    assert math.isfinite(r.p99_latency_ms) == r.stable   # an overloaded GPU has no finite p99


@SETTINGS
@given(n=tenants, p0=duty, s=slice_ms, c=switch_ms)
def test_gpu_seconds_conserved_under_sharing(n, p0, s, c):
    r = bursty_time_slicing(n, p0, 5.0, s, c)
    if not r.stable:
        return
    p = r.busy_share
    assert p0 - 1e-12 <= p < 1.0
    # each tenant gets done exactly the work it offers ...
    assert p * r.mean_throughput_share == pytest.approx(p0, rel=1e-9, abs=1e-12)
    # ... so the GPU's useful time is the offered load: all of it while one tenant is
    # busy, s/(s+c) of it while several are
    e = 1.0 if n == 1 else s / (s + c)
    one_busy = n * p * (1 - p) ** (n - 1)
    useful = (1 - e) * one_busy + e * r.gpu_busy_fraction
    assert useful == pytest.approx(n * p0, rel=1e-9, abs=1e-12)
    assert r.utilization < 1 or n == 1
    assert 0 < r.mean_throughput_share <= 1 and 0 <= r.gpu_busy_fraction <= 1


@SETTINGS
@given(n=st.integers(1, 10), p0=st.floats(0.01, 0.5), dp=st.floats(0.0, 0.2), w=work)
def test_bursty_p99_non_decreasing_in_load(n, p0, dp, w):
    q = bursty_latency_quantile
    # more duty cycle, or one more tenant: never a lower p99 (inf once overloaded)
    assert q(n, min(1.0, p0 + dp), w, 0.99) >= q(n, p0, w, 0.99) - 1e-9
    assert q(n + 1, p0, w, 0.99) >= q(n, p0, w, 0.99) - 1e-9
    assert q(n, p0, w, 0.99) >= w


@SETTINGS
@given(p0=duty, budget=st.floats(1.0, 200.0), w=st.floats(0.5, 20.0))
def test_replicas_within_budget_never_exceed_capacity(p0, budget, w):
    n = max_tenants_within(budget, p0, w)
    assert n <= max_stable_tenants(p0)
    assert n * p0 < 2.0 / 2.1 or n <= 1   # a shared GPU's capacity at 2 ms / 0.1 ms
    if n >= 1:
        assert bursty_latency_quantile(n, p0, w, 0.99) <= budget + 1e-9
    assert max_tenants_within(budget * 2, p0, w) >= n


# --------------------------------------------------------------------- MPS timeline

kernels = st.lists(st.lists(st.builds(Kernel, st.floats(0.1, 10.0), st.sampled_from([0.1, 0.25, 0.5, 1.0])),
                            min_size=1, max_size=4), min_size=1, max_size=5)


@SETTINGS
@given(procs=kernels, pct=st.sampled_from([25.0, 50.0, 100.0]))
def test_mps_conserves_sm_seconds_and_never_exceeds_the_gpu(procs, pct):
    t = kernel_timeline(procs, mps=True, active_thread_percentage=pct)
    # without interference a capped kernel stretches by fraction / share: SM-seconds conserved
    asked = sum(k.duration_ms * k.sm_fraction for ks in procs for k in ks)
    held = sum((r.end_ms - r.start_ms) * r.sm_fraction for r in t.runs)
    assert held == pytest.approx(asked, rel=1e-6)
    assert t.sm_busy_fraction <= 1 + 1e-9
    # at every kernel start the SMs held add up to at most the whole GPU
    for r in t.runs:
        held_then = sum(x.sm_fraction for x in t.runs if x.start_ms <= r.start_ms + 1e-9 < x.end_ms)
        assert held_then <= 1 + 1e-9
    # work-conserving: never slower than running the (capped) kernels one after another
    solo = sum(k.duration_ms * k.sm_fraction / min(k.sm_fraction, pct / 100) for ks in procs for k in ks)
    assert t.makespan_ms <= solo + 1e-6


@SETTINGS
@given(procs=kernels, c=switch_ms)
def test_separate_contexts_serialise(procs, c):
    t = kernel_timeline(procs, mps=False, switch_ms=c)
    total = sum(k.duration_ms for ks in procs for k in ks)
    assert t.makespan_ms >= total - 1e-9
    assert t.sm_busy_fraction <= 1 + 1e-9
    ordered = sorted(t.runs, key=lambda r: r.start_ms)
    assert all(a.end_ms <= b.start_ms + 1e-9 for a, b in zip(ordered, ordered[1:]))


# --------------------------------------------------------------------- MIG arithmetic

def _lab02_profiles():
    return [(model, p) for model in mig.GPU_MODELS for p in mig.profiles(model).values()]


@pytest.mark.parametrize("model,profile", _lab02_profiles(),
                         ids=[f"{m}-{p.name}" for m, p in _lab02_profiles()])
def test_mig_profile_arithmetic(model, profile):
    assert profile.sm_share == pytest.approx(profile.multiprocessors / profile.gpu_sms)
    assert 0 < profile.sm_share <= 1 and 0 < profile.bandwidth_share <= 1
    assert profile.memory_slices <= mig.MEMORY_SLICES and profile.compute_slices <= mig.COMPUTE_SLICES
    # the name's nominal GB is the memory slices' share of the GPU's nominal memory,
    # and the usable GiB nvidia-smi reports is below it
    nominal = mig.nominal_memory_gb(model)
    assert profile.memory_gib <= nominal * profile.memory_slices / 8
    # the instance fits every placement it claims, max_instances of it fit one GPU
    assert all(start + profile.memory_slices <= 8 for start in profile.placements)
    if not profile.media_extensions:
        layout = mig.plan_layout(model, [profile.name] * profile.max_instances)
        assert layout.memory_slices_used <= 8 and layout.compute_slices_used <= 7


def test_more_slices_more_sms_and_memory():
    for model in mig.GPU_MODELS:
        plain = [p for p in mig.profiles(model).values() if not p.media_extensions]
        for a in plain:
            for b in plain:
                if a.compute_slices < b.compute_slices:
                    assert a.multiprocessors <= b.multiprocessors
                if a.memory_slices < b.memory_slices:
                    assert a.memory_gib < b.memory_gib


@pytest.mark.parametrize("model", sorted(MIG_PROFILES))
def test_lab01_mig_table_agrees_with_lab02(model):
    """Lab 01 keeps its own small profile table (it never imports Lab 02): same slices,
    counts and start slots as Lab 02's table from the MIG User Guide."""
    lab02 = {p.name: p for p in mig.profiles(model).values() if not p.media_extensions}
    lab01 = MIG_PROFILES[model]
    assert set(lab01) == set(lab02)
    for name, p1 in lab01.items():
        p2 = lab02[name]
        assert (p1.compute_slices, p1.memory_slices, p1.max_count, p1.starts) == \
            (p2.compute_slices, p2.memory_slices, p2.max_instances, p2.placements)


@SETTINGS
@given(model=st.sampled_from(mig.GPU_MODELS), frac=st.floats(0.01, 1.0), compute=st.floats(0.0, 1.0))
def test_quantization_waste_is_the_smallest_cover(model, frac, compute):
    need = frac * mig.nominal_memory_gb(model)
    try:
        w = quantization_waste(model, need, compute)
    except mig.NoLayoutError:
        top = max(p.sm_share for p in mig.profiles(model).values())
        assert compute > top   # only more SMs than the whole-GPU instance has is refused
        return
    assert w.granted_memory_gb >= need - 1e-9 and w.granted_compute >= compute - 1e-9
    assert w.wasted_memory_gb == pytest.approx(w.granted_memory_gb - need)
    nominal = mig.nominal_memory_gb(model)
    assert w.granted_memory_gb == pytest.approx(nominal * w.profile.memory_slices / 8)
    smaller = [p for p in mig.profiles(model).values() if not p.media_extensions
               and p.memory_slices < w.profile.memory_slices]
    assert not any(nominal * p.memory_slices / 8 >= need - 1e-9 and p.sm_share >= compute - 1e-9
                   for p in smaller)


@SETTINGS
@given(w=work, dw=st.floats(0.0, 10.0), m=st.floats(0.0, 1.0),
       name=st.sampled_from(["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]))
def test_mig_latency_at_least_alone_and_non_decreasing_in_work(w, dw, m, name):
    prof = mig.get_profile("H100-80GB", name)
    assert mig_latency_ms(w, prof, m) >= w - 1e-9
    assert mig_latency_ms(w + dw, prof, m) >= mig_latency_ms(w, prof, m) - 1e-9


# --------------------------------------------------------------------- worked case, economics

@SETTINGS
@given(price=st.floats(0.5, 20.0), p0=st.floats(0.01, 0.6), per_gpu=st.integers(1, 8))
def test_worked_case_costs_are_gpu_share_times_price(price, p0, per_gpu):
    case = WorkedCase(price_per_gpu_hour=price, notebook_duty_cycle=p0, notebooks_per_gpu=per_gpu)
    for o in worked_case(case):
        assert o.cost_per_month == pytest.approx(o.gpu_share * price * HOURS_PER_MONTH)
        assert 0 < o.sm_share <= 1
    ts = [o for o in worked_case(case) if o.mechanism.startswith("time-slicing")][0]
    stable = per_gpu == 1 or per_gpu * p0 < 2 / 2.1
    assert math.isfinite(ts.p99_ms) == stable and (ts.meets <= stable)
    plan = defended_plan(case) if per_gpu * 12 <= 80 and math.ceil(10 / per_gpu) <= 6 else None
    if plan is not None:
        assert plan.monthly_cost == pytest.approx((plan.gpus_used + plan.elsewhere_gpus)
                                                  * price * HOURS_PER_MONTH)
        assert 0 <= plan.idle_gpus <= plan.gpus_used


@SETTINGS
@given(p0=st.floats(0.01, 0.3), dp=st.floats(0.0, 0.3))
def test_worked_case_notebook_p99_non_decreasing_in_duty(p0, dp):
    def p99(d):
        return [o for o in worked_case(WorkedCase(notebook_duty_cycle=d))
                if o.mechanism.startswith("time-slicing")][0].p99_ms
    assert p99(p0 + dp) >= p99(p0) - 1e-9


@SETTINGS
@given(price=st.floats(0.0, 20.0), fleet=st.integers(0, 500), u=st.floats(0.0, 1.0))
def test_idle_capacity_conserves_gpu_hours(price, fleet, u):
    r = economics.idle_capacity(price, fleet, u)
    useful = r.paid_gpu_hours * u
    assert useful + r.idle_gpu_hours == pytest.approx(r.paid_gpu_hours)
    assert r.idle_per_year == pytest.approx(r.idle_gpu_hours * price)
    assert r.idle_per_year <= r.paid_per_year + 1e-6


@SETTINGS
@given(load=st.floats(0.0, 1000.0), more=st.floats(0.0, 100.0), u=st.floats(0.05, 1.0))
def test_fleet_and_cost_non_decreasing_in_load(load, more, u):
    n = economics.fleet_for_work(load, u)
    assert economics.fleet_for_work(load + more, u) >= n
    assert n * u >= load - 1e-6            # the fleet holds the work at that utilisation
    assert economics.fleet_for_work(load, min(1.0, u + 0.05)) <= n


# --------------------------------------------------------------------- two models, one quantity

@SETTINGS
@given(n=st.integers(1, 8), s=slice_ms, c=switch_ms, d=st.floats(1.0, 100.0))
def test_time_slicing_closed_form_matches_lab01_simulator(n, s, c, d):
    """n jobs of d seconds each start together on one GPU time-sliced into n replicas: Lab 01's
    engine (time-slicing plugin, processor sharing) finishes them all at d / share, where
    share is Lab 02's closed-form throughput share for n busy tenants."""
    share = time_slicing(n, 5.0, s, c).throughput_share
    params = TimeSlicingParams(slice_ms=s, switch_us=c * 1000.0)
    assert 1.0 / timeslice_slowdown(n, params) == pytest.approx(share)
    node = timesliced_node("n0", "A100", 1, n, 64_000, 256_000)
    jobs = [Job(f"j{i}", 0.0, d, 1, 1000, 0, 0) for i in range(n)]
    res = Simulation([node], jobs, "first-fit", "gang", "fifo-skip", plugins=[TimeSlicing(params)]).run()
    ends = [r.end_time for r in res.records.values()]
    assert ends == pytest.approx([d / share] * n)


@SETTINGS
@given(durations=st.lists(st.floats(1.0, 50.0), min_size=1, max_size=6))
def test_lab01_simulator_conserves_gpu_seconds(durations):
    """Without a switch cost the GPU delivers one GPU-second per second while any job runs:
    jobs that start together all finish by the sum of their work, the last exactly then,
    and each no earlier than alone (Lab 02's bursty model conserves the same way)."""
    n = len(durations)
    params = TimeSlicingParams(slice_ms=2.0, switch_us=0.0)
    node = timesliced_node("n0", "A100", 1, n, 64_000, 256_000)
    jobs = [Job(f"j{i}", 0.0, d, 1, 1000, 0, 0) for i, d in enumerate(durations)]
    res = Simulation([node], jobs, "first-fit", "gang", "fifo-skip", plugins=[TimeSlicing(params)]).run()
    ends = {r.job_id: r.end_time for r in res.records.values()}
    assert max(ends.values()) == pytest.approx(sum(durations))
    assert all(ends[f"j{i}"] >= d - 1e-9 for i, d in enumerate(durations))


# --------------------------------------------------------------------- inputs outside the domain

NAN, INF = float("nan"), float("inf")
_LAB02_REFUSALS = {
    "tenants 0": lambda: time_slicing(0, 5.0),
    "switch NaN": lambda: time_slicing(2, 5.0, switch_ms=NAN),
    "duty NaN": lambda: offered_load(2, NAN),
    "duty 0": lambda: bursty_time_slicing(2, 0.0, 5.0),
    "duty above 1": lambda: bursty_time_slicing(2, 1.5, 5.0),
    "work inf": lambda: bursty_time_slicing(2, 0.1, INF),
    "budget NaN": lambda: max_tenants_within(NAN, 0.1, 5.0),
    "kernel share NaN": lambda: kernel_timeline([[Kernel(1.0, NAN)]], mps=True),
    "kernel time inf": lambda: kernel_timeline([[Kernel(INF, 0.5)]], mps=False),
    "memory-bound NaN": lambda: mig_latency_ms(5.0, mig.get_profile("H100-80GB", "3g.40gb"), NAN),
    "MIG memory NaN": lambda: quantization_waste("H100-80GB", NAN),
    "MIG memory inf": lambda: quantization_waste("H100-80GB", INF),
    "case duty NaN": lambda: worked_case(WorkedCase(notebook_duty_cycle=NAN)),
}


@pytest.mark.parametrize("case", sorted(_LAB02_REFUSALS))
def test_lab02_models_refuse_inputs_outside_their_domain(case):
    from lab02_device_plugin.errors import InputError
    with pytest.raises(InputError):
        _LAB02_REFUSALS[case]()


@pytest.mark.parametrize("call", [
    lambda: economics.idle_capacity(INF, 3, 0.5),
    lambda: economics.idle_capacity(4.0, 3, NAN),
    lambda: economics.gpus_needed(10, 0.5, NAN),
    lambda: economics.fleet_for_work(NAN, 0.5),
    lambda: economics.fleet_for_work(10.0, 0.0),
    lambda: economics.utilisation_steps(4.0, 10.0, [0.5, 0.4]),
], ids=["price inf", "utilisation NaN", "target NaN", "work NaN", "utilisation 0", "unsorted"])
def test_economics_refuses_inputs_outside_its_domain(call):
    from lab01_cluster_sim.errors import InputError
    with pytest.raises(InputError):
        call()


def _lab01_response_times(n: int, p0: float, seed: int = 7, per_tenant: int = 300) -> tuple[float, float]:
    """n tenants, each submitting 1 s jobs at random (exponential gaps, mean 1/p0 s, seeded)
    to one GPU time-sliced into n replicas (2 ms slices, 100 us switches) in Lab 01's engine:
    the mean response time of the first and of the last tenth of the jobs, in seconds."""
    import random

    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        t = 0.0
        for k in range(per_tenant):
            t += rng.expovariate(p0)
            jobs.append(Job(f"t{i}-{k}", t, 1.0, 1, 1000, 0, 0))
    jobs.sort(key=lambda j: j.submit_time)
    node = timesliced_node("n0", "A100", 1, n, 64_000, 256_000)
    res = Simulation([node], jobs, "first-fit", "gang", "fifo-skip",
                     plugins=[TimeSlicing(TimeSlicingParams(2.0, 100.0))]).run()
    recs = sorted(res.records.values(), key=lambda r: r.job.submit_time)
    resp = [r.end_time - r.job.submit_time for r in recs]
    tenth = len(resp) // 10
    return sum(resp[:tenth]) / tenth, sum(resp[-tenth:]) / tenth


@pytest.mark.parametrize("n,p0", [(3, 0.2), (2, 0.45), (3, 0.4)])
def test_stability_condition_agrees_with_lab01_simulator(n, p0):
    """Lab 02's condition n p0 < s/(s+c) (here 2/2.1) decides what Lab 01's engine shows on
    the same inputs: below it the response times stay bounded, above it they keep growing
    (the last jobs wait many times longer than the first)."""
    first, last = _lab01_response_times(n, p0)
    if offered_load(n, p0, 2.0, 0.1).stable:
        assert last < 10.0 and last < 2 * first
    else:
        assert last > 5 * first and last > 50.0
