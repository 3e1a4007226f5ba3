"""The mechanism decision table (lab02_device_plugin.decision)."""

import pytest

from lab02_device_plugin.decision import ISOLATION, Requirements, decide, decision_table
from lab02_device_plugin.errors import InputError


def test_whole_gpus_are_exclusive_and_rounded_up():
    d = decide(Requirements(gpus=1.5, workload="training"))
    assert d.mechanism == "exclusive"
    assert d.request == "nvidia.com/gpu: 2"  # extended resources are integers: ceil(1.5) = 2


def test_isolation_on_mig_gpu_gives_mig_and_on_l40s_a_whole_gpu():
    assert decide(Requirements(gpus=0.5, gpu_model="h100-80gb", other_tenants=True)).mechanism == "MIG"
    d = decide(Requirements(gpus=0.5, gpu_model="L40S", fault_isolation=True))
    assert d.mechanism == "exclusive"
    assert "no MIG" in d.reason


def test_trusted_inference_gets_mps_with_thread_percentage():
    d = decide(Requirements(gpus=0.3, workload="inference"))
    assert d.mechanism == "MPS"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30" in d.reason  # ceil(0.3*100)
    assert d.isolates == {"memory": True, "fault": False, "performance": False}


def test_interactive_gets_time_slicing_and_dra_when_sizes_vary():
    assert decide(Requirements(gpus=0.25, workload="interactive")).mechanism == "time-slicing"
    assert decide(Requirements(gpus=0.5, dra_available=True, varying_sizes=True)).mechanism == "DRA"
    # isolation wins over DRA convenience
    assert decide(Requirements(gpus=0.5, dra_available=True, varying_sizes=True,
                               other_tenants=True)).mechanism == "MIG"


def test_half_gpu_answers_are_honest():
    assert "No MIG profile is exactly half" in decide(
        Requirements(gpus=0.5, other_tenants=True)).half_gpu
    assert decide(Requirements(gpus=0.5, workload="interactive")).half_gpu.startswith("No")


def test_table_and_isolation_cover_all_mechanisms():
    mechs = {d.mechanism for _, _, d in decision_table()}
    assert mechs == set(ISOLATION)


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
    # answer's own rule says ("the smallest profile whose memory fits"). It has 3/7 = 43 % of
    # the SMs < the 50 % asked, so the reason names 4g.40gb (4/7 = 57 %) as the alternative.
    d = decide(Requirements(gpus=0.5, gpu_model="h100-80gb", other_tenants=True, memory_gb=30))
    assert d.request == "nvidia.com/mig-3g.40gb: 1 (mixed strategy)"
    assert "is 3g.40gb (43% of the SMs)" in d.reason
    assert "4g.40gb covers both" in d.reason


def test_half_mig_answer_allows_two_3g_instances():
    # 3g: at most 2 per GPU, start slots {0, 4} (device-plugin-facts): 3g + 3g is a valid layout,
    # so the answer must not say "one 4g plus one 3g at most".
    text = decide(Requirements(gpus=0.5, gpu_model="a100-40gb", other_tenants=True)).half_gpu
    assert "at most" not in text
    assert "two 3g" in text


def test_mig_answer_by_memory_with_compute_alternative():
    # 0.25 of the SMs and 15 GB on an A100-80GB: 1g.10gb has 10 GB (< 15); 1g.20gb has 20 GB
    # -> 1g.20gb by memory; it has 1/7 = 14 % of the SMs < 25 %, and 2g.20gb (2/7 = 29 %) covers both.
    d = decide(Requirements(gpus=0.25, gpu_model="a100-80gb", other_tenants=True, memory_gb=15))
    assert d.request == "nvidia.com/mig-1g.20gb: 1 (mixed strategy)"
    assert "2g.20gb covers both" in d.reason
    # 0.1 of the SMs and 15 GB: 1g.20gb covers both (14 % >= 10 %), so no alternative is named
    d = decide(Requirements(gpus=0.1, gpu_model="a100-80gb", other_tenants=True, memory_gb=15))
    assert d.request == "nvidia.com/mig-1g.20gb: 1 (mixed strategy)"
    assert "covers both" not in d.reason
    # no table for B200 here: the generic answer
    d = decide(Requirements(gpus=0.5, gpu_model="b200", other_tenants=True, memory_gb=30))
    assert d.mechanism == "MIG" and "<profile>" in d.request


def test_bad_memory():
    with pytest.raises(InputError, match="memory_gb"):
        Requirements(gpus=0.5, memory_gb=0)
