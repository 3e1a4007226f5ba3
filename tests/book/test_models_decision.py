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
