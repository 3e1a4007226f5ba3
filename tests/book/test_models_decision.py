"""The mechanism decision table (lab02_device_plugin.models.decision) and chapter 5's worked
case (lab02_device_plugin.models.worked_case)."""

import math

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.models.decision import (
    FEATURE_STATE, GPU_MEMORY_GB, ISOLATION, MIG_CAPABLE, NBSP, SHARED_RESOURCES, SHARING,
    Requirements, decide, decision_table, draw_sharing_matrix, gpu_name, half_gpu_mig,
    isolation_rows,
)
from lab02_device_plugin.models.worked_case import (
    OPTION_COLUMNS, WHOLE_GPU, WorkedCase, defended_plan, mig_latency_ms, option_rows, worked_case,
)
from lab02_device_plugin.plugin.mig import get_profile


def test_whole_gpus_are_exclusive_and_rounded_up():
    d = decide(Requirements(gpus=1.5, workload="training"))
    assert d.mechanism == "exclusive"
    assert d.request == "nvidia.com/gpu: 2"  # extended resources are integers: ceil(1.5) = 2


def test_isolation_on_mig_gpu_gives_mig_and_on_l40s_a_whole_gpu():
    assert decide(Requirements(gpus=0.5, gpu_model="h100-80gb", other_tenants=True)).mechanism == "MIG"
    d = decide(Requirements(gpus=0.5, gpu_model="L40S", fault_isolation=True))
    assert d.mechanism == "exclusive"
    assert "no MIG" in d.reason


def test_trusted_inference_gets_mps_with_replicas():
    # 0.3 of a GPU: floor(1/0.3) = 3 replicas; NVIDIA's plugin sets 100 // 3 = 33 % of the
    # threads and a third of the memory per client (daemon.go), a pod's env var only lowers it
    d = decide(Requirements(gpus=0.3, workload="inference"))
    assert d.mechanism == "MPS"
    assert "replicas: 3" in d.reason and f"33{NBSP}% of the threads" in d.reason
    assert "experimental since v0.15.0 (still in v0.20.0)" in d.reason
    assert d.request == "nvidia.com/gpu: 1 from sharing.mps (replicas: 3)"
    assert d.isolates == {"memory": "partial", "fault": "no", "performance": "partial"}
    # case 4 of the table: a quarter of an A100 -> replicas 4, 25 %
    label, _, d = decision_table()[3]
    assert "replicas: 4" in d.reason and f"25{NBSP}% of the threads" in d.reason


def test_interactive_gets_time_slicing_and_dra_when_sizes_vary():
    assert decide(Requirements(gpus=0.25, workload="interactive")).mechanism == "time-slicing"
    assert decide(Requirements(gpus=0.5, dra_available=True, varying_sizes=True)).mechanism == "DRA"
    # isolation wins over DRA convenience
    assert decide(Requirements(gpus=0.5, dra_available=True, varying_sizes=True,
                               other_tenants=True)).mechanism == "MIG"


def test_half_gpu_answers_are_honest():
    assert "No MIG profile is exactly half" in decide(
        Requirements(gpus=0.5, other_tenants=True)).half_gpu
    # the A30's 2g.12gb is 2/4 of the memory and 2/4 of the SMs (MIG User Guide, A30 table)
    a30 = decide(Requirements(gpus=0.5, gpu_model="a30", other_tenants=True)).half_gpu
    assert a30.startswith("Yes, on the A30: its 2g.12gb profile has half the memory and half")
    # B200 has 7 compute slices and no table here: the generic answer
    assert "No MIG profile is exactly half" in decide(
        Requirements(gpus=0.5, gpu_model="b200", other_tenants=True)).half_gpu
    assert decide(Requirements(gpus=0.5, workload="interactive")).half_gpu.startswith("No")


def test_table_and_isolation_cover_all_mechanisms():
    mechs = {d.mechanism for _, _, d in decision_table()}
    assert mechs == set(ISOLATION) | {"DRA"}
    assert len(decision_table()) == 7
    label, req, d = decision_table()[6]
    assert label == "strict latency SLO, production serving" and d.mechanism == "exclusive"
    assert "strict latency SLO" in d.reason and "MIG" in d.reason
    # DRA is a row to watch, with its feature state and versions
    label, _, d = decision_table()[5]
    assert "watch this" in label and d.reason.startswith("Watch this")
    assert "Technology Preview" in d.reason
    # KEP-5075 and the feature-gate definitions: consumable capacity alpha v1.34, beta (on by
    # default) v1.36, like partitionable devices; the core API GA v1.34, locked on in v1.35
    assert ("Partitionable devices (DRAPartitionableDevices) and consumable capacity "
            "(DRAConsumableCapacity, KEP-5075): beta, on by default, since v1.36") in d.reason
    assert "GA v1.34, locked on since v1.35" in FEATURE_STATE["DRA"]
    assert "alpha" not in FEATURE_STATE["DRA"]


def test_isolation_scores_shared_by_chapters_1_and_5():
    # MIG: partial on faults (GPU-wide events reach every instance); time-slicing: none
    # promised by NVIDIA; totals 3, 2.5, 1, 0 for exclusive, MIG, MPS, time-slicing
    totals = {m: sum(v.score for v in dims.values()) for m, dims in ISOLATION.items()}
    assert totals == {"exclusive": 3.0, "MIG": 2.5, "MPS": 1.0, "time-slicing": 0.0}
    assert "Xid 79" in ISOLATION["MIG"]["fault"].note
    rows = isolation_rows()
    assert [r[0] for r in rows] == ["MPS", "MIG", "time-slicing"]
    assert rows[1][3].startswith("partial: yes for application faults")


def test_sharing_matrix_and_its_drawing():
    assert set(SHARING) == {"exclusive", "MIG", "MPS", "time-slicing"}
    for mech, cells in SHARING.items():
        assert tuple(cells) == SHARED_RESOURCES, mech
    assert SHARING["MIG"]["SMs"] == "space" and SHARING["time-slicing"]["SMs"] == "time"
    assert SHARING["MPS"]["SMs"] == "capped" and SHARING["MPS"]["fault domain"] == "shared"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ax = draw_sharing_matrix()
    assert len(ax.patches) == 4 * 8  # one cell per mechanism and resource
    plt.close(ax.figure)


def test_mig_capable_follows_the_guide():
    for gpu in ("a30", "h20", "gh200", "b300", "rtx-pro-6000-blackwell", "rtx-pro-5000-blackwell"):
        assert MIG_CAPABLE[gpu] is True
    for gpu in ("l4", "l40s", "a10g", "t4"):
        assert MIG_CAPABLE[gpu] is False


@pytest.mark.parametrize("kwargs, name", [
    ({"gpus": 0}, "gpus"), ({"gpus": -1}, "gpus"), ({"gpus": True}, "gpus"),
    ({"gpus": 0.5, "gpu_model": "rtx9999"}, "gpu_model"),
    ({"gpus": 0.5, "workload": "gaming"}, "workload"),
])
def test_bad_requirements(kwargs, name):
    with pytest.raises(InputError, match=name):
        Requirements(**kwargs)


def test_mig_answer_names_the_smallest_profile_whose_memory_fits():
    # H100-80GB, 30 GB: 2g.20gb is too small (20 GB); 3g.40gb has 40 GB -> 3g.40gb, as the
    # answer's own rule says ("the smallest profile whose memory fits"). It has 60 of 132 SMs
    # = 45 % < the 50 % asked; 4g.40gb has 64/132 = 48 %, so only 7g.80gb has both.
    d = decide(Requirements(gpus=0.5, gpu_model="h100-80gb", other_tenants=True, memory_gb=30))
    assert d.request == "nvidia.com/mig-3g.40gb: 1 (mixed strategy)"
    assert f"is 3g.40gb (45{NBSP}% of the SMs)" in d.reason
    assert f"the smallest profile with both is 7g.80gb (100{NBSP}%)" in d.reason
    assert "the H100 SXM5 80GB supports MIG" in d.reason and "h100-80gb" not in d.reason
    half = half_gpu_mig("h100-80gb")
    assert f"On the H100 SXM5 80GB, 3g.40gb has 60 of 132 SMs (45{NBSP}%)" in half
    assert f"4g.40gb 64 (48{NBSP}%)" in half
    assert "no profile below 7g reaches half" in half
    # A100: 4g.20gb has 56 of 108 SMs = 52 %: there a 4g does reach half
    assert "4g.20gb is the smallest with half the SMs" in half_gpu_mig("a100-40gb")


def test_half_mig_answer_allows_two_3g_instances():
    # 3g: at most 2 per GPU, start slots {0, 4} (NVIDIA MIG User Guide, ``-lgipp``): 3g + 3g is a valid layout,
    # so the answer must not say "one 4g plus one 3g at most".
    text = decide(Requirements(gpus=0.5, gpu_model="a100-40gb", other_tenants=True)).half_gpu
    assert "at most" not in text
    assert "holds two 3g.20gb" in text


def test_mig_answer_by_memory_with_compute_alternative():
    # 0.25 of the SMs and 15 GB on an A100-80GB: 1g.10gb has 10 GB (< 15); 1g.20gb has 20 GB
    # -> 1g.20gb by memory; it has 14/108 = 13 % of the SMs < 25 %, and 2g.20gb (28/108 =
    # 26 %) has both.
    d = decide(Requirements(gpus=0.25, gpu_model="a100-80gb", other_tenants=True, memory_gb=15))
    assert d.request == "nvidia.com/mig-1g.20gb: 1 (mixed strategy)"
    assert f"is 1g.20gb (13{NBSP}% of the SMs)" in d.reason
    assert f"the smallest profile with both is 2g.20gb (26{NBSP}%)" in d.reason
    # 0.1 of the SMs and 15 GB: 1g.20gb covers both (13 % >= 10 %), so no alternative is named
    d = decide(Requirements(gpus=0.1, gpu_model="a100-80gb", other_tenants=True, memory_gb=15))
    assert d.request == "nvidia.com/mig-1g.20gb: 1 (mixed strategy)"
    assert "with both" not in d.reason
    # no table for B200 here: the generic answer
    d = decide(Requirements(gpus=0.5, gpu_model="b200", other_tenants=True, memory_gb=30))
    assert d.mechanism == "MIG" and "<profile>" in d.request


def test_bad_memory():
    with pytest.raises(InputError, match="memory_gb"):
        Requirements(gpus=0.5, memory_gb=0)


def test_worked_case_numbers():
    opts = {(o.tenant, o.mechanism): o for o in worked_case()}
    month = 4.00 * 730  # $2,920 per H100-month
    # inference, 8 ms per request on a whole H100, 24 GB per replica, SLO 50 ms
    assert opts[("inference", "exclusive GPU")].cost_per_month == pytest.approx(month)
    mig = opts[("inference", "MIG 3g.40gb")]
    # compute on 60 of 132 SMs, the memory-bound 30 % on 4 of 8 memory slices' bandwidth:
    # 8 (0.7 x 132/60 + 0.3 x 8/4) = 8 (1.54 + 0.6) = 17.12 ms (17.6 if all of it scaled by SMs)
    assert mig.p99_ms == pytest.approx(17.12)
    assert mig.cost_per_month == pytest.approx(month / 2) and mig.meets
    mps = opts[("inference", "MPS, replicas 3")]
    # 3 replicas capped at a third, m = 0.3: alone 8 (0.7 x 3 + 0.3) = 19.2 ms, m' = 2.4/19.2
    # = 0.125; together 19.2 (0.875 + 0.125 x 3) = 24.0 ms, the serial time (3 x 8 ms). The
    # old model stretched the whole kernel and then applied m = 0.3: 24 x 1.6 = 38.4 ms.
    assert mps.p99_ms == pytest.approx(24.0)
    assert mps.measure == f"all 3 replicas busy at once, each capped at 33{NBSP}% of the SMs"
    assert mps.memory_headroom_gb == pytest.approx(80 / 3 - 24)  # 2.7 GB under the MPS limit
    ts = opts[("inference", "time-sliced with notebooks")]
    assert ts.memory_headroom_gb == pytest.approx(80 - 24 - 5 * 12) and not ts.meets  # -4 GB
    # regulated: 3g.40gb 45 %, 4g.40gb 48 % of the SMs, both isolated, neither half
    assert opts[("regulated", "MIG 4g.40gb")].sm_share == pytest.approx(64 / 132)
    assert not opts[("regulated", "MPS or time-slicing")].meets
    # notebooks: 5 per GPU at 10 % duty -> $584 each; alone (0.9^4 = 66 %) they get the whole
    # GPU. MIG 1g.20gb (12 GB needs 2 memory slices): 26 of 132 SMs -> a 200 ms cell takes
    # 200 x 132 / 26 = 1015.4 ms, every time.
    nb = opts[("notebooks", "time-slicing, replicas 5")]
    assert nb.cost_per_month == pytest.approx(month / 5) and nb.memory_headroom_gb == 20
    assert opts[("notebooks", "MIG 1g.20gb")].p99_ms == pytest.approx(200 * 132 / 26)
    assert nb.p99_ms < opts[("notebooks", "MIG 1g.20gb")].p99_ms
    assert all(len(r) == len(OPTION_COLUMNS) == 11 for r in option_rows(worked_case()))


def test_defended_plan_fits_one_node():
    plan = defended_plan()
    # 3 inference 3g + regulated 4g: 2 GPUs (3g+3g, 4g+3g); 10 notebooks / 5 per GPU: 2 GPUs
    assert plan.gpus[:4] == ("3g.40gb + 3g.40gb", "4g.40gb + 3g.40gb",
                             "7g.80gb time-sliced x5", "7g.80gb time-sliced x5")
    assert plan.gpus_used == 4 and plan.dedicated_gpus == 14
    assert plan.monthly_cost == pytest.approx(4 * 2920) and plan.dedicated_monthly_cost == pytest.approx(14 * 2920)
    assert plan.reboot_gpu_hours == pytest.approx(8 * 15 / 60)
    # the plugin config parses with Lab 02's parser (the NVIDIA format)
    import yaml
    from lab02_device_plugin.plugin.config import parse_config
    cfg = parse_config(yaml.safe_load(plan.plugin_config), "<plan>")
    assert cfg is not None
    mig_cfg = yaml.safe_load(plan.mig_config)
    assert mig_cfg["mig-configs"]["tenants-mixed"][1]["mig-devices"] == {"4g.40gb": 1, "3g.40gb": 1}


def test_bad_worked_case():
    with pytest.raises(InputError, match="WorkedCase.notebooks"):
        worked_case(WorkedCase(notebooks=0))
    with pytest.raises(InputError, match="WorkedCase.price_per_gpu_hour"):
        worked_case(WorkedCase(price_per_gpu_hour=float("nan")))
    with pytest.raises(InputError, match="needs 9 GPUs"):
        defended_plan(WorkedCase(notebooks=35, notebooks_per_gpu=5))  # 2 + 7 GPUs


def test_mig_latency_scales_compute_by_sms_and_memory_by_bandwidth():
    q3 = get_profile("H100-80GB", "3g.40gb")
    assert mig_latency_ms(8.0, q3, 0.0) == pytest.approx(8 * 132 / 60)   # 17.6: compute-bound
    assert mig_latency_ms(8.0, q3, 1.0) == pytest.approx(16.0)           # 8 / (4/8)
    # 1g.20gb: 26 of 132 SMs, 2 of 8 memory slices: 200 (0.5 x 132/26 + 0.5 x 4) = 907.7 ms
    assert mig_latency_ms(200.0, get_profile("H100-80GB", "1g.20gb"), 0.5) == \
        pytest.approx(200 * (0.5 * 132 / 26 + 0.5 * 4))
    with pytest.raises(InputError, match="memory_bound"):
        mig_latency_ms(8.0, q3, 1.5)


def test_mps_answer_checks_memory_against_the_plugin_limit():
    # 60 GB on an 80 GB H100: replicas 2 would limit each client to 40 GB -> a whole GPU
    d = decide(Requirements(gpus=0.25, memory_gb=60, gpu_model="h100-80gb"))
    assert d.mechanism == "exclusive" and d.request == "nvidia.com/gpu: 1"
    assert f"replicas: 2 leaves 40{NBSP}GB" in d.reason
    # 30 GB: floor(80 / 30) = 2 replicas fit, not the 4 a quarter of a GPU would give
    d = decide(Requirements(gpus=0.25, memory_gb=30, gpu_model="h100-80gb"))
    assert d.mechanism == "MPS" and d.request.endswith("(replicas: 2)")
    assert f"50{NBSP}% of the threads" in d.reason and "Memory decides" in d.reason
    # 10 GB on an A100-40GB at 0.25: 4 x 10 = 40 GB fits, replicas stay 4
    d = decide(Requirements(gpus=0.25, memory_gb=10, gpu_model="a100-40gb"))
    assert d.request.endswith("(replicas: 4)") and "Memory fits" in d.reason
    # V100 comes with 16 or 32 GB: unknown here, so the answer says to check
    assert "v100" not in GPU_MEMORY_GB
    d = decide(Requirements(gpus=0.3, memory_gb=10, gpu_model="v100"))
    assert f"Check that 10{NBSP}GB fits 1/3 of the V100's memory" in d.reason
    # time-slicing has no limit, but the sum must fit: a quarter of a GPU would be 4 replicas,
    # 4 x 12 GB = 48 GB > the L4's 24 GB, floor(24 / 12) = 2
    d = decide(Requirements(gpus=0.25, memory_gb=12, gpu_model="l4", workload="interactive"))
    assert d.mechanism == "time-slicing" and d.request.endswith("replicas: 2)")
    assert "allows replicas: 2, not the 4" in d.reason
    d = decide(Requirements(gpus=0.5, memory_gb=12, gpu_model="l4", workload="interactive"))
    assert "Nothing limits memory under time-slicing, so the sum must fit" in d.reason
    # more memory than the card: nothing to share
    d = decide(Requirements(gpus=0.5, memory_gb=30, gpu_model="l4", workload="interactive"))
    assert d.mechanism == "exclusive" and "more than the L4 has" in d.reason


def test_training_fractions_get_their_own_reason():
    d = decide(Requirements(gpus=0.5, workload="training"))
    assert d.mechanism == "MPS" and d.reason.startswith("Small training jobs of one trusted team")
    assert "notebook" not in d.reason


def test_gpu_names_in_text():
    assert gpu_name("h100-80gb") == "H100 SXM5 80GB" and gpu_name("L40S") == "L40S"
    d = decide(Requirements(gpus=0.5, gpu_model="l40s", other_tenants=True))
    assert "the L40S has no MIG" in d.reason


def test_defended_plan_with_the_regulated_tenant_alone():
    month = 4.00 * 730
    # on a GPU of its own: [3g+3g], [3g], [whole GPU], 2 notebook GPUs = 5 GPUs, one more
    # than the shared layout. The tenant pays for the whole GPU ($1,460 -> $2,920), so it
    # gets the whole GPU, MIG off (review 2026-12-02, 5.2), not a 4g.40gb beside an empty
    # half; only half of the lone 3g GPU is idle.
    shared, alone = defended_plan(), defended_plan(regulated="gpu")
    assert shared.gpus_used == 4 and shared.idle_gpus == 0.0
    assert shared.regulated_price_per_month == pytest.approx(month / 2)
    assert alone.gpus[:3] == ("3g.40gb + 3g.40gb", "3g.40gb", WHOLE_GPU)
    assert alone.gpus_used == 5 and alone.monthly_cost == pytest.approx(5 * month)
    assert alone.idle_gpus == pytest.approx(0.5)
    assert alone.regulated_price_per_month == pytest.approx(month)
    assert "4g.40gb" not in alone.mig_config
    assert "- devices: [2, 5, 6, 7]\n      mig-enabled: false" in alone.mig_config
    # on a node of its own: this node uses 4 GPUs, one more GPU elsewhere: still 5 paid
    node = defended_plan(regulated="node")
    assert node.gpus_used == 4 and node.elsewhere_gpus == 1
    assert node.monthly_cost == pytest.approx(5 * month) and "4g.40gb" not in node.mig_config
    with pytest.raises(InputError, match="regulated: expected one of instance, gpu, node"):
        defended_plan(regulated="rack")


def test_overloaded_notebooks_get_no_finite_p99():
    # 5 notebooks per GPU at 50 %: 2.5 GPUs of work on one GPU (review 2026-12-02, 5.1)
    options = worked_case(WorkedCase(notebook_duty_cycle=0.5))
    ts = [o for o in options if o.tenant == "notebooks" and o.mechanism.startswith("time")][0]
    assert ts.p99_ms == math.inf and not ts.meets
    assert ts.why.startswith("overloaded: 5 x 50\u00a0% = 2.5 GPUs of work")
    row = option_rows([ts])[0]
    assert row[4] == "unbounded (p99)"
    # at the default 10 %, 0.5 GPUs of work: stable, and the p99 is finite
    ts10 = [o for o in worked_case() if o.mechanism == "time-slicing, replicas 5"][0]
    assert math.isfinite(ts10.p99_ms) and ts10.meets
