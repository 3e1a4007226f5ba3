"""MIG tables, placement, quantization waste, naming (facts sec. 5)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.models.mig_partition import (
    addable_profiles, draw_layout, largest_fitting_prefix, quantization_waste,
)
from lab02_device_plugin.plugin.mig import (
    GPU_MODELS, LGIP_SOURCES, MIG_GPUS, NoLayoutError, canonical_model, get_profile,
    gpu_multiprocessors, mixed_resource_name, plan_layout, profiles, table_name,
)


def test_four_tables_seven_profiles_each():
    assert GPU_MODELS == ("A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB")
    assert list(profiles("H200-141GB")) == ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb",
                                            "3g.71gb", "4g.71gb", "7g.141gb"]
    assert list(profiles("A100-40GB"))[0] == "1g.5gb"


@pytest.mark.parametrize("model, name, mem, sm, mx, placements", [
    ("A100-40GB", "1g.5gb", Fraction(1, 8), Fraction(1, 7), 7, (0, 1, 2, 3, 4, 5, 6)),
    ("A100-40GB", "1g.10gb", Fraction(2, 8), Fraction(1, 7), 4, (0, 2, 4, 6)),
    ("A100-80GB", "3g.40gb", Fraction(4, 8), Fraction(3, 7), 2, (0, 4)),
    ("H100-80GB", "4g.40gb", Fraction(4, 8), Fraction(4, 7), 1, (0,)),
    ("H100-80GB", "1g.10gb+me", Fraction(1, 8), Fraction(1, 7), 1, (0, 1, 2, 3, 4, 5, 6)),
    ("H200-141GB", "7g.141gb", Fraction(1), Fraction(1), 1, (0,)),
    ("H200-141GB", "2g.35gb", Fraction(2, 8), Fraction(2, 7), 3, (0, 2, 4)),
])
def test_profile_rows(model, name, mem, sm, mx, placements):
    p = get_profile(model, name)
    assert (p.memory_fraction, p.compute_fraction, p.max_instances, p.placements) == \
        (mem, sm, mx, placements)


def test_lgip_figures_where_captured():
    assert get_profile("A100-80GB", "1g.20gb").memory_gib == 19.50
    assert get_profile("A100-80GB", "1g.20gb").multiprocessors == 14
    # every table is complete now, each with a named source
    for model in GPU_MODELS:
        assert all(p.memory_gib and p.multiprocessors for p in profiles(model).values()), model
        assert LGIP_SOURCES[model]
    assert get_profile("H100-80GB", "7g.80gb").memory_gib == 79.25


@pytest.mark.parametrize("model, sms", [
    # H100 SXM5 (capture, driver 590.48.01: 1g.10gb 16, 2g.20gb 32, 3g.40gb 60) and -lgip
    ("H100-80GB", {"1g.10gb": 16, "1g.20gb": 26, "2g.20gb": 32, "3g.40gb": 60, "4g.40gb": 64,
                   "7g.80gb": 132}),
    ("A100-40GB", {"1g.5gb": 14, "2g.10gb": 28, "3g.20gb": 42, "4g.20gb": 56, "7g.40gb": 98}),
    ("H200-141GB", {"1g.18gb": 16, "1g.35gb": 26, "2g.35gb": 32, "3g.71gb": 60, "4g.71gb": 64,
                    "7g.141gb": 132}),
])
def test_sm_counts_are_not_sevenths(model, sms):
    for name, count in sms.items():
        assert get_profile(model, name).multiprocessors == count
    total = gpu_multiprocessors(model)
    # H100/H200: 3g gets 60/132 = 45.5 %, 4g 64/132 = 48.5 %: no profile below 7g reaches
    # half. A100: 4g has 56/108 = 51.9 %, 3g 42/108 = 38.9 %.
    below_7g = [p.sm_share for p in profiles(model).values() if p.compute_slices < 7]
    assert max(below_7g) == pytest.approx(64 / 132 if total == 132 else 56 / 108)
    assert get_profile(model, [n for n in sms if n.startswith("7g")][0]).sm_share == \
        pytest.approx(sms[[n for n in sms if n.startswith("7g")][0]] / total)


def test_a100_mig_gives_up_sms_even_at_7g():
    # A100: 98 of 108 SMs in a 7g instance = 90.7 %; a request for all SMs fits no instance
    assert get_profile("A100-80GB", "7g.80gb").sm_share == pytest.approx(98 / 108)
    with pytest.raises(NoLayoutError, match="exceed the largest instance of a A100-80GB"):
        quantization_waste("A100-80GB", 10, 1.0)


def test_mig_gpus_from_the_guide():
    # MIG User Guide "Supported GPUs": A30 up to 4 instances with 4 memory and 4 compute
    # slices (its profiles are 1/4, 2/4, 4/4); RTX PRO 6000 Blackwell 4; RTX PRO 5000 2
    assert (MIG_GPUS["a30"].max_instances, MIG_GPUS["a30"].memory_slices,
            MIG_GPUS["a30"].compute_slices) == (4, 4, 4)
    assert MIG_GPUS["rtx-pro-6000-blackwell"].max_instances == 4
    assert MIG_GPUS["rtx-pro-5000-blackwell"].max_instances == 2
    assert {g.table for g in MIG_GPUS.values() if g.table} == set(GPU_MODELS)


@pytest.mark.parametrize("product, key", [
    ("NVIDIA A100-SXM4-80GB", "A100-80GB"), ("A100-PCIE-40GB", "A100-40GB"),
    ("NVIDIA H100 80GB HBM3", "H100-80GB"), ("NVIDIA H200", "H200-141GB"),
    ("NVIDIA H100 NVL", None), ("NVIDIA GeForce RTX 3080", None), ("Tesla K80", None),
    # the H100 PCIe has 114 SMs, not the 132 of the SXM5 table: no table for it
    ("NVIDIA H100 PCIe", None),
])
def test_canonical_model(product, key):
    assert canonical_model(product) == key


def test_unknown_model_and_profile_errors():
    with pytest.raises(InputError, match="GPU model 'Tesla K80': no MIG profile table"):
        profiles("Tesla K80")
    with pytest.raises(InputError, match=r"MIG profile '1g.5gb' does not exist on H100-80GB; "
                                         "expected one of 1g.10gb"):
        get_profile("H100-80GB", "1g.5gb")


def test_plan_layout_real_h100_capture_mix():
    # 3g (4 slices) + 2g (2) + 1g + 1g = 8 memory slices, 3+2+1+1 = 7 compute slices.
    # The 3g cannot take slot 0: then the 2g sits at 4 and the two 1g need 6 and 7, but no 1g
    # starts at 7. So the 3g goes to slot 4, the 2g to 0 and the 1g to 2 and 3.
    layout = plan_layout("H100-80GB", ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])
    assert [(p.profile.name, p.start) for p in layout.placements] == \
        [("3g.40gb", 4), ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3)]
    assert (layout.memory_slices_used, layout.compute_slices_used) == (8, 7)
    assert layout.slot_owners() == [1, 1, 2, 3, 0, 0, 0, 0]
    assert layout.addable_profiles() == []


def test_plan_layout_seven_1g_and_what_remains():
    layout = plan_layout("A100-40GB", ["1g.5gb"] * 7)
    assert [p.start for p in layout.placements] == [0, 1, 2, 3, 4, 5, 6]
    # After one 3g at slot 4, facts sec. 5: only 1g at 0-3, 1g 2-slice at 0/2, 2g at 0/2,
    # 3g/4g at 0 remain (7g does not).
    # (A lone 3g goes to slot 4: slots 0-3 then still take a 4g, which may only start at 0.)
    base = plan_layout("A100-80GB", ["3g.40gb"], existing=())
    assert base.placements[0].start == 4
    from lab02_device_plugin.plugin.mig import Placement
    at4 = (Placement(get_profile("A100-80GB", "3g.40gb"), 4),)
    layout = plan_layout("A100-80GB", [], existing=at4)
    assert layout.addable_profiles() == ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb",
                                         "3g.40gb", "4g.40gb"]
    four = plan_layout("A100-80GB", ["4g.40gb"], existing=at4)
    assert four.placements[-1].start == 0


@pytest.mark.parametrize("requested, reason", [
    (["3g.40gb"] * 3, "3 x 3g.40gb asked, but at most 2 fit on H100-80GB"),
    (["1g.10gb"] * 8, "8 x 1g.10gb asked, but at most 7 fit"),
    (["4g.40gb", "3g.40gb", "1g.10gb"], "8 compute slices asked"),
    (["1g.10gb+me", "1g.10gb+me"], "1 fit"),
    (["4g.40gb", "2g.20gb", "2g.20gb"], "8 compute slices asked"),
    # 4 x 2 + 1 = 9 memory slices
    (["1g.20gb"] * 4 + ["1g.10gb"], "9 memory slices asked"),
])
def test_plan_layout_says_why_not(requested, reason):
    with pytest.raises(NoLayoutError) as exc:
        plan_layout("H100-80GB", requested)
    assert reason in exc.value.reason


def test_plan_layout_is_an_input_error_for_unknown_profiles():
    with pytest.raises(InputError, match="'5g.50gb' does not exist"):
        plan_layout("H100-80GB", ["5g.50gb"])


def test_quantization_waste():
    # 6 GB on an A100-40GB: 1g.5gb (5 GB) is too small; next by memory slices is the
    # 2-slice 1g.10gb: 10 GB granted, 4 GB wasted; 14 of 108 SMs granted, none asked.
    w = quantization_waste("A100-40GB", 6)
    assert w.profile.name == "1g.10gb"
    assert (w.granted_memory_gb, w.wasted_memory_gb) == (10.0, 4.0)
    assert w.granted_compute == pytest.approx(14 / 108)
    # 20 GB and 40 % of the SMs on an H100: 2g.20gb has the memory but 32/132 = 24 % of
    # the SMs; 3g.40gb has 60/132 = 45.5 % -> 3g.40gb, 20 GB and 5.5 points of SMs wasted.
    w = quantization_waste("H100-80GB", 20, 0.4)
    assert w.profile.name == "3g.40gb"
    assert w.wasted_memory_gb == 20.0
    assert w.granted_compute == pytest.approx(60 / 132)
    assert w.wasted_compute == pytest.approx(60 / 132 - 0.4)
    # half an H100 with 30 GB: 3g.40gb covers the memory (45 %), 4g.40gb has 48 % of the
    # SMs, so only 7g.80gb grants both
    assert quantization_waste("H100-80GB", 30, 0.5).profile.name == "7g.80gb"
    with pytest.raises(NoLayoutError, match="exceed the largest instance of a H100-80GB"):
        quantization_waste("H100-80GB", 90)


@pytest.mark.parametrize("profile, name", [
    ("1g.10gb", "nvidia.com/mig-1g.10gb"), ("3g.40gb", "nvidia.com/mig-3g.40gb"),
    ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me"),
])
def test_mixed_resource_name(profile, name):
    assert mixed_resource_name(profile) == name


def test_draw_layout_draws_one_box_per_instance():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layout = plan_layout("H200-141GB", ["1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"])
    ax = draw_layout(layout)
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"]
    # 8 grey slot backgrounds + 4 instances
    assert len(ax.patches) == 12
    plt.close(ax.figure)


def test_plan_layout_slot_7_is_never_a_1g_start():
    # A 3g already at slot 0 leaves slots 4-7 (4 memory slices, 4 compute slices): four
    # 1g.10gb add up (4 + 4 = 8 memory, 3 + 4 = 7 compute) but would need slot 7.
    from lab02_device_plugin.plugin.mig import Placement
    at0 = (Placement(get_profile("H100-80GB", "3g.40gb"), 0),)
    with pytest.raises(NoLayoutError, match="no non-overlapping placement"):
        plan_layout("H100-80GB", ["1g.10gb"] * 4, existing=at0)
    assert [p.start for p in plan_layout("H100-80GB", ["1g.10gb"] * 3, existing=at0).placements] \
        == [0, 4, 5, 6]


def test_planner_prefers_the_layout_that_leaves_room():
    # H200 3g + 2g + 1g: with the 3g at slot 0 the 2g takes 4-5 and the 1g slot 6, leaving
    # only slot 7, where no 1g may start. With the 3g at 4, the 2g at 0 and the 1g at 2,
    # slot 3 stays free for another 1g.18gb (review part 1, ch03 #1).
    layout = plan_layout("H200-141GB", ["3g.71gb", "2g.35gb", "1g.18gb"])
    assert [(p.profile.name, p.start) for p in layout.placements] == \
        [("3g.71gb", 4), ("2g.35gb", 0), ("1g.18gb", 2)]
    assert layout.addable_profiles() == ["1g.18gb", "1g.18gb+me"]
    # re-planning request + candidate says the same, with the layout that makes room
    more = addable_profiles("H200-141GB", ["3g.71gb", "2g.35gb", "1g.18gb"])
    assert list(more) == ["1g.18gb", "1g.18gb+me"]
    assert [(p.profile.name, p.start) for p in more["1g.18gb"].placements][-1] == ("1g.18gb", 3)
    # the in-place answer for the worse layout is "nothing": that is why the planner avoids it
    from lab02_device_plugin.plugin.mig import Layout, Placement
    worse = Layout("H200-141GB", (Placement(get_profile("H200-141GB", "3g.71gb"), 0),
                                  Placement(get_profile("H200-141GB", "2g.35gb"), 4),
                                  Placement(get_profile("H200-141GB", "1g.18gb"), 6)))
    assert worse.addable_profiles() == []


def test_three_1g_keep_the_4g_slot_free():
    # 3 x 1g.5gb on an A100-40GB: at slots 0-2 a 4g (slot 0 only) no longer fits; at 4-6
    # slots 0-3 stay free for a 4g, 3g, 2g or 1g: more profiles addable -> slots 4, 5, 6.
    layout = plan_layout("A100-40GB", ["1g.5gb"] * 3)
    assert [p.start for p in layout.placements] == [4, 5, 6]
    assert "4g.20gb" in layout.addable_profiles()


def test_largest_fitting_prefix_for_invalid_requests():
    # 4g + 3g + 1g on an H100: 8 compute slices. 4g@0 and 3g@4 fit, the 1g is left over.
    layout, left = largest_fitting_prefix("H100-80GB", ["1g.10gb", "3g.40gb", "4g.40gb"])
    assert [(p.profile.name, p.start) for p in layout.placements] == [("4g.40gb", 0), ("3g.40gb", 4)]
    assert [p.name for p in left] == ["1g.10gb"]
    assert largest_fitting_prefix("H100-80GB", ["1g.10gb"])[1] == []


def test_h100_table_is_the_sxm5_part_and_pcie_is_listed_without_one():
    # MIG User Guide: H100 SXM5 and PCIe both have MIG; the -lgip SM counts here (60 of 132
    # for 3g.40gb) are the SXM5's, so the PCIe card gets no table, and no SM shares
    assert table_name("H100-80GB") == "H100 SXM5 80GB"
    assert table_name("NVIDIA H100 80GB HBM3") == "H100 SXM5 80GB"
    assert MIG_GPUS["h100-pcie-80gb"].table is None
    with pytest.raises(InputError, match="no MIG profile table"):
        quantization_waste("NVIDIA H100 PCIe", 20)
    with pytest.raises(InputError, match="no MIG profile table"):
        table_name("NVIDIA H100 PCIe")


def test_bandwidth_share_follows_memory_slices_and_a30_half():
    # a memory slice is about 1/8 of capacity and bandwidth: 3g.40gb and 4g.40gb hold 4 of 8
    assert get_profile("H100-80GB", "3g.40gb").bandwidth_share == 0.5
    assert get_profile("H100-80GB", "1g.20gb").bandwidth_share == 0.25  # 2 memory slices
    assert get_profile("H100-80GB", "1g.10gb+me").bandwidth_share == 0.125
    # A30: 2g.12gb is 2/4 of the memory and 2/4 of the SMs (guide's A30 table)
    assert MIG_GPUS["a30"].half_profile == "2g.12gb"
    assert get_profile("H100-80GB", "1g.10gb+me").media_extensions
