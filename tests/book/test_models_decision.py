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


def test_mig_answer_names_the_smallest_covering_profile():
    # H100-80GB, 30 GB and half the SMs: 2g.20gb is too small (20 GB); 3g.40gb has 40 GB but
    # only 3/7 = 0.43 of the SMs < 0.5; 4g.40gb has 4/7 = 0.57 -> 4g.40gb.
    d = decide(Requirements(gpus=0.5, gpu_model="h100-80gb", other_tenants=True, memory_gb=30))
    assert d.request == "nvidia.com/mig-4g.40gb: 1 (mixed strategy)"
    assert "4g.40gb" in d.reason
    # 0.25 of the SMs and 15 GB on an A100-80GB: 1g.10gb has 10 GB (< 15), 1g.20gb has 20 GB but
    # 1/7 = 0.14 < 0.25 of the SMs; 2g.20gb has 2/7 = 0.29 and 20 GB -> 2g.20gb
    d = decide(Requirements(gpus=0.25, gpu_model="a100-80gb", other_tenants=True, memory_gb=15))
    assert d.request == "nvidia.com/mig-2g.20gb: 1 (mixed strategy)"
    # no table for B200 here: the generic answer
    d = decide(Requirements(gpus=0.5, gpu_model="b200", other_tenants=True, memory_gb=30))
    assert d.mechanism == "MIG" and "<profile>" in d.request


def test_bad_memory():
    with pytest.raises(InputError, match="memory_gb"):
        Requirements(gpus=0.5, memory_gb=0)
