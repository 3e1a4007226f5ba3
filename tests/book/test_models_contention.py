"""Time-slicing and MPS teaching models (lab02_device_plugin.models.contention)."""

import math

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.models.contention import (Kernel, bursty_latency_quantile, bursty_time_slicing,
                                            capped_kernel, inference_processes, kernel_timeline, latency_quantile,
                                            max_stable_tenants, max_tenants_within, mps_gain, offered_load,
                                            time_slicing)


def test_alone_no_penalty():
    r = time_slicing(1, 5.0, slice_ms=2.0, switch_ms=0.1)
    assert r.throughput_share == 1.0
    assert r.p99_latency_ms == 5.0


def test_four_tenants_hand_computed():
    # n=4, s=2, c=0.1, w=5: k=ceil(5/2)=3 slices; one round = 4*(2.1) = 8.4 ms
    # wait quantile q*(n-1)*(s+c) = q*6.3; latency = wait + 2*8.4 + (5 - 2*2) = wait + 17.8
    r = time_slicing(4, 5.0, slice_ms=2.0, switch_ms=0.1)
    assert r.throughput_share == pytest.approx(2.0 / 8.4)  # 0.238
    assert r.gpu_efficiency == pytest.approx(2.0 / 2.1)
    assert r.p50_latency_ms == pytest.approx(0.5 * 6.3 + 17.8)   # 20.95
    assert r.p99_latency_ms == pytest.approx(0.99 * 6.3 + 17.8)  # 24.037
    assert latency_quantile(4, 5.0, 0.0, 2.0, 0.1) == pytest.approx(17.8)


def test_longer_slices_cut_tail_of_long_requests_but_not_short():
    # w=1 ms fits in one slice: latency = q*(n-1)*(s+c) + 1, grows with s
    assert latency_quantile(4, 1.0, 0.99, 8.0, 0.1) > latency_quantile(4, 1.0, 0.99, 1.0, 0.1)
    # more tenants -> higher p99
    assert time_slicing(8, 5.0).p99_latency_ms > time_slicing(2, 5.0).p99_latency_ms


def test_mps_overlaps_small_kernels():
    # 3 clients x 2 kernels of 2 ms at 25 % SMs: with MPS all three fit at once (75 %)
    # -> makespan 2 kernels x 2 ms = 4 ms; busy = 6 kernels*2ms*0.25 = 3 SM-ms / 4 ms = 0.75
    procs = inference_processes(3, 2, duration_ms=2.0, sm_fraction=0.25)
    with_mps = kernel_timeline(procs, mps=True)
    assert with_mps.makespan_ms == pytest.approx(4.0)
    assert with_mps.sm_busy_fraction == pytest.approx(0.75)
    # without MPS: 6 kernels in series (12 ms) + 5 switches between processes x 0.1 = 12.5 ms
    without = kernel_timeline(procs, mps=False, switch_ms=0.1)
    assert without.makespan_ms == pytest.approx(12.5)
    assert all(a.end_ms <= b.start_ms + 1e-9 for a, b in zip(without.runs, without.runs[1:]))


def test_mps_thread_cap_stretches_kernel():
    # a kernel wanting 100 % SMs capped at 50 % runs 2x longer: 2 ms -> 4 ms, two clients side by side
    procs = [[Kernel(2.0, 1.0)], [Kernel(2.0, 1.0)]]
    t = kernel_timeline(procs, mps=True, active_thread_percentage=50)
    assert [(r.start_ms, r.end_ms, r.sm_fraction) for r in t.runs] == [(0.0, 4.0, 0.5), (0.0, 4.0, 0.5)]
    # uncapped: the second waits for the first: makespan 4 ms as well, but serial
    t2 = kernel_timeline(procs, mps=True)
    assert [(r.start_ms, r.end_ms) for r in t2.runs] == [(0.0, 2.0), (2.0, 4.0)]


def test_bad_input():
    with pytest.raises(InputError, match="tenants"):
        time_slicing(0, 5.0)
    with pytest.raises(InputError, match="slice_ms"):
        time_slicing(2, 5.0, slice_ms=0)
    with pytest.raises(InputError, match=r"processes\[0\]\[0\].sm_fraction"):
        kernel_timeline([[Kernel(1.0, 1.5)]], mps=True)
    with pytest.raises(InputError, match="active_thread_percentage"):
        kernel_timeline([[Kernel(1.0, 0.5)]], mps=True, active_thread_percentage=0)
    with pytest.raises(InputError, match="processes"):
        kernel_timeline([], mps=False)


def test_mps_is_work_conserving_six_clients():
    # 6 clients x 4 kernels of 2 ms at a quarter of the SMs = 24 kernels x 0.5 SM-ms = 12 SM-ms
    # of work: a work-conserving schedule runs 4 at a time, 6 rounds of 2 ms = 12 ms at 100 %.
    # (The old index-ordered model left clients 5 and 6 idle for 8 ms: 16 ms at 75 %.)
    procs = inference_processes(6, 4, duration_ms=2.0, sm_fraction=0.25)
    t = kernel_timeline(procs, mps=True)
    assert t.makespan_ms == pytest.approx(12.0)
    assert t.sm_busy_fraction == pytest.approx(1.0)
    # readiness order: at t=2 clients 5 and 6 (ready since 0) start before clients 1 and 2
    # (ready at 2); so every client has run a kernel by t=4
    first_start = {p: min(r.start_ms for r in t.runs if r.process == p) for p in range(6)}
    assert first_start == {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0, 4: 2.0, 5: 2.0}
    # without MPS: 24 kernels x 2 ms = 48 ms + 23 switches x 0.1 ms = 50.3 ms -> 4.19x
    g = mps_gain(6)
    assert g.without_ms == pytest.approx(50.3)
    assert g.speedup == pytest.approx(50.3 / 12.0)


def test_mps_gain_saturates_near_one_over_sm_share():
    # 4, 6 and 8 clients of width 1/4: the gain stops growing once 4 fill the GPU.
    # n clients: without = 8n ms of kernels + (4n - 1) x 0.1 ms; with = 2 ms x ceil(4n / 4) = 2n ms
    gains = [mps_gain(n).speedup for n in (4, 6, 8)]
    assert gains == pytest.approx([33.5 / 8, 50.3 / 12, 67.1 / 16])  # 4.19 each
    assert all(abs(x - 4.0) < 0.2 for x in gains)                   # ~ 1 / 0.25
    assert mps_gain(4).bound == pytest.approx(4.0)


def test_mps_memory_bound_interference():
    # m = 0.2: four co-running kernels each progress at 1 / (0.8 + 0.2 x 4) = 1/1.6 of solo
    # speed: a 2 ms kernel takes 3.2 ms; 6 rounds -> 19.2 ms. Bound 1 / (0.25 x 0.8 + 0.2) = 2.5.
    g = mps_gain(6, memory_bound=0.2)
    assert g.with_ms == pytest.approx(19.2)
    assert g.bound == pytest.approx(2.5)
    assert g.speedup == pytest.approx(50.3 / 19.2)  # 2.62: below 1/sm_share = 4
    # alone, a kernel is not slowed: 1 client x 4 kernels x 2 ms = 8 ms
    assert kernel_timeline(inference_processes(1, 4), mps=True, memory_bound=0.9).makespan_ms \
        == pytest.approx(8.0)


def test_wide_kernel_does_not_block_narrow_ones():
    # client 0 holds 60 % for 4 ms; client 1 wants 60 % (does not fit), client 2 wants 20 %
    # (fits): work-conserving, client 2 starts at 0 and client 1 at 4.
    procs = [[Kernel(4.0, 0.6)], [Kernel(2.0, 0.6)], [Kernel(2.0, 0.2)]]
    t = kernel_timeline(procs, mps=True)
    assert {r.process: r.start_ms for r in t.runs} == {0: 0.0, 1: 4.0, 2: 0.0}
    assert t.makespan_ms == pytest.approx(6.0)


def test_bursty_time_slicing_hand_computed():
    # n = 2, no switch cost (e = 1), each tenant offers p0 = 0.32 of a GPU. A busy tenant
    # sees the other busy with probability p: share = (1-p) x 1 + p x 1/2, and work
    # conservation p x share = p0 gives p - p^2/2 = 0.32, p = 1 - sqrt(1 - 0.64) = 0.4.
    r = bursty_time_slicing(2, 0.32, work_ms=1.0, slice_ms=2.0, switch_ms=0.0)
    assert r.stable and r.offered_gpus == pytest.approx(0.64) and r.capacity_gpus == 1.0
    assert r.busy_share == pytest.approx(0.4)
    assert r.p_alone == pytest.approx(0.6)
    assert r.mean_busy_tenants == pytest.approx(1.4)
    assert r.mean_throughput_share == pytest.approx(0.8)       # 0.6 + 0.4 / 2 = p0 / p
    assert r.gpu_busy_fraction == pytest.approx(0.64)          # 1 - 0.6^2 = the offered load
    # w = 1 ms (one slice): latency 1 alone (0.6), else 1 + U[0, 2]:
    # CDF(x) = 0.6 + 0.4 (x - 1) / 2 = 0.99 -> x = 2.95; p50 = 1
    assert r.p50_latency_ms == pytest.approx(1.0)
    assert r.p99_latency_ms == pytest.approx(2.95, abs=1e-6)


def test_busy_share_is_the_fixed_point_the_review_computed():
    # Review 2026-12-02, finding 4.3 (its bisection over the book's own functions):
    # 4 tenants at 10 %: p = 0.121, share 82.5 %; 5: p = 0.132, p99 17.7 ms; 6: p = 0.145,
    # p99 21.8 ms (over a 20 ms budget).
    four, five, six = (bursty_time_slicing(n, 0.1, 5.0) for n in (4, 5, 6))
    assert round(four.busy_share, 3) == 0.121 and round(four.mean_throughput_share, 3) == 0.825
    assert round(five.busy_share, 3) == 0.132 and round(five.p99_latency_ms, 1) == 17.7
    assert round(six.busy_share, 3) == 0.145 and round(six.p99_latency_ms, 1) == 21.8
    assert max_tenants_within(20.0, 0.1, 5.0) == 5


def test_overloaded_gpu_has_no_finite_p99():
    # 3 tenants at 50 %: 1.5 GPUs of work on a GPU that delivers 2/2.1 = 0.952 while shared
    r = bursty_time_slicing(3, 0.5, 5.0)
    assert not r.stable
    assert r.offered_gpus == 1.5 and r.capacity_gpus == pytest.approx(2 / 2.1)
    assert r.utilization == pytest.approx(1.5 * 2.1 / 2)
    assert r.p99_latency_ms == math.inf and r.p50_latency_ms == math.inf
    assert r.busy_share == 1.0 and r.p_alone == 0.0
    assert r.mean_throughput_share == pytest.approx(2 / 6.3)   # all busy: s / (n (s + c))
    assert bursty_latency_quantile(3, 0.5, 5.0, 0.99) == math.inf
    # exactly at capacity is not stable either: 2 x 0.5 = 1 GPU, no switch cost
    assert not offered_load(2, 0.5, 2.0, 0.0).stable
    assert offered_load(2, 0.49, 2.0, 0.0).stable
    # at 50 % only one tenant per GPU has a steady state, so the budget allows one
    assert max_stable_tenants(0.5) == 1 and max_tenants_within(20.0, 0.5, 5.0) == 1
    # 10 %: 9 x 0.1 = 0.9 < 0.952 <= 10 x 0.1
    assert max_stable_tenants(0.1) == 9
    # a dedicated GPU is never overloaded by its own tenant
    assert offered_load(1, 1.0).stable and bursty_time_slicing(1, 1.0, 5.0).p99_latency_ms == 5.0


def test_bursty_p99_five_ms_and_replicas_within_budget():
    # one tenant alone: p99 = w; a budget below w admits no tenant
    assert max_tenants_within(4.0, 0.1, 5.0) == 0
    assert max_tenants_within(5.0, 0.1, 5.0) == 1
    n = max_tenants_within(50.0, 0.1, 5.0)
    assert n <= max_stable_tenants(0.1)
    assert bursty_latency_quantile(n, 0.1, 5.0, 0.99) <= 50.0 < bursty_latency_quantile(n + 1, 0.1, 5.0, 0.99)


def test_bad_bursty_input():
    with pytest.raises(InputError, match="duty_cycle"):
        bursty_time_slicing(4, 0.0, 1.0)
    with pytest.raises(InputError, match="duty_cycle"):
        bursty_time_slicing(4, 1.5, 1.0)
    with pytest.raises(InputError, match="tenants"):
        bursty_time_slicing(5000, 0.5, 1.0)
    with pytest.raises(InputError, match="memory_bound"):
        kernel_timeline([[Kernel(1.0, 0.5)]], mps=True, memory_bound=1.5)
    with pytest.raises(InputError, match="clients"):
        inference_processes(0)


def test_capped_kernel_stretches_only_its_compute():
    # an 8 ms kernel that wants every SM, m = 0.3, capped at a third: the 5.6 ms of compute
    # triples (16.8 ms), the 2.4 ms that saturate bandwidth do not: 19.2 ms alone, of which
    # 2.4 / 19.2 = 0.125 memory-bound
    solo, m = capped_kernel(Kernel(8.0, 1.0), 1 / 3, 0.3)
    assert solo == pytest.approx(19.2) and m == pytest.approx(0.125)
    one = kernel_timeline([[Kernel(8.0, 1.0)]], mps=True, active_thread_percentage=100 / 3,
                          memory_bound=0.3)
    assert one.makespan_ms == pytest.approx(19.2)
    # m = 0: the whole kernel stretches, 2 ms at half the SMs = 4 ms (exercise 2.1)
    assert capped_kernel(Kernel(2.0, 1.0), 0.5, 0.0) == pytest.approx((4.0, 0.0))


def test_capped_mps_clients_do_not_count_bandwidth_twice():
    # three such clients together: each at 1 / (0.875 + 0.125 x 3) = 0.8 of its capped solo
    # speed -> 19.2 / 0.8 = 24.0 ms, exactly the three kernels one after another (3 x 8 ms):
    # the bandwidth-bound floor (3 x 2.4 = 7.2 ms of saturated bandwidth each).
    # (Stretching the whole kernel and then applying m = 0.3 gave 24 x 1.6 = 38.4 ms.)
    procs = [[Kernel(8.0, 1.0)] for _ in range(3)]
    t = kernel_timeline(procs, mps=True, active_thread_percentage=100 / 3, memory_bound=0.3)
    assert t.makespan_ms == pytest.approx(24.0)
    serial = kernel_timeline(procs, mps=False, switch_ms=0.0)
    assert serial.makespan_ms == pytest.approx(24.0)
    # uncapped kernels are unchanged: the 6-client figure of chapter 2 stays at 19.2 ms
    assert mps_gain(6, memory_bound=0.2).with_ms == pytest.approx(19.2)
