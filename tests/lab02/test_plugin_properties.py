"""Property tests (hypothesis): MIG layouts are valid and complete; preferences are well-formed."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import Gpu, Inventory
from lab02_device_plugin.plugin.mig import GPU_MODELS, NoLayoutError, plan_layout, profiles
from lab02_device_plugin.plugin.sharing import advertise, preferred_allocation


@st.composite
def requests(draw):
    model = draw(st.sampled_from(GPU_MODELS))
    names = list(profiles(model))
    return model, draw(st.lists(st.sampled_from(names), min_size=1, max_size=7))


def _brute_force_exists(model: str, names: list[str]) -> bool:
    table = profiles(model)
    ps = [table[n] for n in names]
    for starts in itertools.product(*(p.placements for p in ps)):
        used = [False] * 8
        ok = True
        for p, s in zip(ps, starts):
            for k in range(s, s + p.memory_slices):
                if used[k]:
                    ok = False
                    break
                used[k] = True
            if not ok:
                break
        if ok:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(requests())
def test_plan_layout_is_valid_or_provably_impossible(req):
    model, names = req
    table = profiles(model)
    try:
        layout = plan_layout(model, names)
    except NoLayoutError:
        counts = {n: names.count(n) for n in names}
        within_limits = (all(c <= table[n].max_instances for n, c in counts.items())
                         and sum(c for n, c in counts.items() if n.endswith("+me")) <= 1
                         and sum(table[n].compute_slices for n in names) <= 7)
        # Refused although within every count limit: then no placement exists at all.
        if within_limits:
            assert not _brute_force_exists(model, names)
        return
    assert [p.profile.name for p in layout.placements] == names
    used = [0] * 8
    for p in layout.placements:
        assert p.start in p.profile.placements
        for k in p.slots:
            used[k] += 1
    assert max(used) <= 1
    assert layout.compute_slices_used <= 7
    for n in set(names):
        assert names.count(n) <= table[n].max_instances


@settings(max_examples=200, deadline=None)
@given(n_gpus=st.integers(1, 6), replicas=st.integers(2, 5), data=st.data())
def test_replica_preference_is_well_formed_and_spreads(n_gpus, replicas, data):
    inv = Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 1) for i in range(n_gpus)))
    cfg = parse_config({"sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": replicas}]}}})
    (r,) = advertise(inv, cfg).resources
    ids = [d.id for d in r.devices]
    size = data.draw(st.integers(1, len(ids)))
    got = preferred_allocation(r, ids, [], size)
    assert len(got) == size == len(set(got)) and set(got) <= set(ids)
    # On a fresh node the distributed policy touches min(size, GPUs) distinct GPUs, and
    # no GPU gets two more replicas than another.
    per_gpu = [sum(1 for g in got if g.startswith(f"GPU-{i}::")) for i in range(n_gpus)]
    assert sum(1 for c in per_gpu if c) == min(size, n_gpus)
    assert max(per_gpu) - min(per_gpu) <= 1


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_whole_gpu_preference_honours_must_include(data):
    n = 8
    inv = Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 1, nvlink_island=i // 4, numa_node=i // 4)
                          for i in range(n)))
    (r,) = advertise(inv, parse_config(None)).resources
    ids = [d.id for d in r.devices]
    avail = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n, unique=True))
    must = data.draw(st.lists(st.sampled_from(avail), max_size=len(avail), unique=True))
    size = data.draw(st.integers(len(must) or 1, len(avail)))
    got = preferred_allocation(r, avail, must, size)
    assert got[:len(must)] == must
    assert len(got) == size == len(set(got)) and set(got) <= set(avail)
