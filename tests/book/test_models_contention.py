"""Time-slicing and MPS teaching models (lab02_device_plugin.contention)."""

import pytest

from lab02_device_plugin.contention import (Kernel, inference_processes, kernel_timeline,
                                            latency_quantile, time_slicing)
from lab02_device_plugin.errors import InputError


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
