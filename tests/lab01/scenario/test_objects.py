"""What the scenario reader makes of each kind of object (hand-computed values)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.admission import PreemptionPolicy, QueueingStrategy
from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Node
from lab01_cluster_sim.scenario import ScenarioError, blockers, load_scenario
from lab01_cluster_sim.scenario.fields import parse_duration
from lab01_cluster_sim.kubescheduler.noderesources import NodeResourcesFit, broken_linear

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {nvidia.com/gpu.product: A100, nvidia.com/gpu.clique: rack-1}}
status: {allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8"}, capacity: {cpu: "72", memory: 300Gi}}
"""


def _load(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return load_scenario(p)


def test_node_from_allocatable_and_gfd_labels(tmp_path):
    (n,) = _load(tmp_path, NODE).nodes
    # allocatable wins over capacity; 64 CPUs = 64000 m; 256Gi = 262144 MiB; island from the clique
    assert (n.name, n.gpu_model, n.gpu_count, n.cpu_milli, n.memory_mib, n.nvlink_island) == \
        ("n0", "A100", 8, 64000, 262144, 0)


def test_pod_request_sums_containers_and_takes_the_larger_init_container(tmp_path):
    # containers: 1 + 0.5 CPU = 1500 m, 1Gi + 512Mi = 1536 MiB; init container 2 CPUs, 1Gi:
    # effective CPU max(1500, 2000) = 2000 m, memory max(1536, 1024) = 1536 MiB.
    # nvidia.com/gpu only as a limit: the request defaults to the limit (2).
    sc = _load(tmp_path, NODE + """---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a, annotations: {lab01.course/duration: "60", lab01.course/submit-time: "5"}}
spec:
  initContainers:
  - {name: init, image: x, resources: {requests: {cpu: "2", memory: 1Gi}}}
  containers:
  - {name: a, image: x, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {nvidia.com/gpu: "2"}}}
  - {name: b, image: x, resources: {requests: {cpu: 500m, memory: 512Mi}}}
""")
    (j,) = sc.jobs
    assert (j.job_id, j.tenant, j.cpu_milli, j.memory_mib, j.gpus_per_worker, j.gpu_milli, j.duration, j.submit_time) \
        == ("team-a/p", "team-a", 2000, 1536, 2, 1000, 60.0, 5.0)


def test_job_parallelism_priority_and_kueue_labels(tmp_path):
    sc = _load(tmp_path, NODE + """---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: default-prio}
value: 7
globalDefault: true
---
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {kueue.x-k8s.io/queue-name: lq}
  annotations: {lab01.course/duration: inf, kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 4
  template:
    spec:
      priorityClassName: high
      restartPolicy: Never
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain, annotations: {lab01.course/duration: "1"}}
spec: {containers: [{name: c, image: x}]}
""")
    j, plain = sorted(sc.jobs, key=lambda x: x.job_id)
    assert (j.workers, j.priority, math.isinf(j.duration)) == (4, 1000, True)
    assert j.extras["kueue.x-k8s.io/queue-name"] == "lq" and j.extras["min_count"] == 2
    assert plain.priority == 7                      # the globalDefault class
    assert any("kueue.x-k8s.io labels/annotations without Kueue objects" in b for b in blockers(sc))


def test_pod_group_makes_a_gang(tmp_path):
    pods = "".join(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: w{i}
  labels: {{scheduling.x-k8s.io/pod-group: pg}}
  annotations: {{lab01.course/duration: "100", lab01.course/submit-time: "{i}"}}
spec: {{containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]}}
""" for i in range(3))
    sc = _load(tmp_path, NODE + """---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 3}
""" + pods)
    (g,) = sc.jobs
    # three pods of 2 GPUs: one gang of 3 workers, arriving when the last pod exists (t=2)
    assert (g.job_id, g.workers, g.gpus_per_worker, g.submit_time) == ("pg", 3, 2, 2.0)
    assert sc.unsupported == []


def test_pod_group_of_several_shapes_is_a_multi_role_gang(tmp_path):
    # issue 17: a launcher Pod (2 CPUs) and three worker Pods (2 GPUs), one of them tolerating a
    # taint the others do not: three shapes, so three roles in the order of their first Pod
    def pod(name, resources, t, extra=""):
        return (f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n"
                f"  labels: {{scheduling.x-k8s.io/pod-group: pg}}\n"
                f"  annotations: {{lab01.course/duration: \"{100 + t}\", lab01.course/submit-time: \"{t}\"}}\n"
                f"spec: {{{extra}containers: [{{name: c, image: x, resources: {resources}}}]}}\n")
    gpu = '{limits: {nvidia.com/gpu: "2"}}'
    pods = (pod("w0", gpu, 1) + pod("launcher", '{requests: {cpu: "2"}}', 0) + pod("w1", gpu, 3)
            + pod("w2", gpu, 2, "tolerations: [{key: spot, operator: Exists}], "))
    sc = _load(tmp_path, NODE + "---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg}\n"
                                  "spec: {minMember: 4}\n" + pods)
    assert [(j.job_id, j.role.name, j.role.index, j.role.roles, j.workers, j.gpus_per_worker, j.cpu_milli,
             j.extras["pods"]) for j in sc.jobs] == [
        ("pg-w0", "w0", 0, 3, 2, 2, 0, ("w0", "w1")),
        ("pg-launcher", "launcher", 1, 3, 1, 0, 2000, ("launcher",)),
        ("pg-w2", "w2", 2, 3, 1, 2, 0, ("w2",)),
    ]
    assert {j.role.gang for j in sc.jobs} == {"pg"}
    # every role arrives with the last Pod (t=3) and runs as long as its longest Pod
    assert [(j.submit_time, j.duration) for j in sc.jobs] == [(3.0, 103.0), (3.0, 100.0), (3.0, 102.0)]
    assert "tolerations" in sc.jobs[2].extras and "tolerations" not in sc.jobs[0].extras
    assert sc.unsupported == []


def test_pod_group_roles_of_different_priorities_are_refused(tmp_path):
    pods = "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {n}, labels: {{scheduling.x-k8s.io/pod-group: pg}}, annotations: {{lab01.course/duration: "1"}}}}
spec: {{{pc}containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}
""" for n, pc, cpu in (("a", "", 1), ("b", "priorityClassName: high, ", 2)))
    sc = _load(tmp_path, NODE + "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
                                  "value: 5\n---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                                  "metadata: {name: pg}\nspec: {minMember: 2}\n" + pods)
    (item,) = sc.unsupported
    assert item.endswith(": PodGroup/pg: Pods of different priorities in one gang (a 0, b 5) are not modelled; give "
                         "every Pod of the group the same priorityClassName")


def test_elastic_pod_group_is_named_as_not_executable(tmp_path):
    pods = "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: w{i}, labels: {{scheduling.x-k8s.io/pod-group: pg}}, annotations: {{lab01.course/duration: "1"}}}}
spec: {{containers: [{{name: c, image: x}}]}}
""" for i in range(3))
    sc = _load(tmp_path, NODE + "---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg}\n"
                                  "spec: {minMember: 2}\n" + pods)
    (item,) = sc.unsupported
    assert "PodGroup/pg" in item and "minMember 2 < 3 pods (an elastic gang)" in item


def test_kueue_objects_become_admission_records(tmp_path):
    sc = load_scenario(REPO_ROOT / "scenarios" / "kueue-borrowing")
    a, b = sorted(sc.kueue.cluster_queues, key=lambda c: c.name)
    assert (a.cohort, a.queueing_strategy, a.preemption.reclaim_within_cohort) == \
        ("research", QueueingStrategy.BEST_EFFORT_FIFO, PreemptionPolicy.ANY)
    quotas = a.quotas()
    # 192 CPUs = 192000 m; 2Ti = 2 * 2**40 bytes; 8 GPUs
    assert quotas[("h100", "cpu")].nominal == 192000
    assert quotas[("h100", "memory")].nominal == 2 * 2**40
    assert quotas[("h100", "nvidia.com/gpu")].nominal == 8
    assert {(q.namespace, q.name, q.cluster_queue) for q in sc.kueue.local_queues} == \
        {("team-a", "team-a-queue", "team-a"), ("team-b", "team-b-queue", "team-b")}
    assert sc.kueue.controller().tree.available("team-a", ("h100", "nvidia.com/gpu")) == 16


def test_node_pool_with_crd_defaults(tmp_path):
    sc = _load(tmp_path, """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge]}
  limits: {nvidia.com/gpu: "4", cpu: "100"}
""")
    (pool,) = sc.node_pools
    # CRD defaults: WhenEmptyOrUnderutilized, consolidateAfter 0s, expireAfter 720h = 2592000 s
    assert (pool.consolidation_policy, pool.consolidate_after_s, pool.expire_after_s, pool.limit_gpus) == \
        ("WhenEmptyOrUnderutilized", 0.0, 2_592_000.0, 4.0)
    assert [t.name for t in pool.instance_types] == ["g5.xlarge"] and pool.capacity_type == "on-demand"
    assert any("limits.cpu is not modelled" in u for u in sc.unsupported)


def test_unknown_instance_type_is_an_error(tmp_path):
    with pytest.raises(ScenarioError, match=r"requirements\[0\].values: instance type 'p9.huge' is not in the catalogue"):
        _load(tmp_path, """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: g, kind: k, name: n}
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [p9.huge]}]
""")


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("1h30m", 5400), ("720h", 2_592_000), ("1.5s", 1.5)])
def test_go_durations(text, seconds):
    assert parse_duration(text) == seconds


# -- NodeResourcesFit (kube-scheduler's formulas) ---------------------------------------------------
def _state():
    # node 0: 4 of 8 GPUs and 32 of 64 CPUs in use; node 1: empty.
    st = ClusterState([Node("a", "A100", 8, 64000, 256000), Node("b", "A100", 8, 64000, 256000)])
    st.bind(0, (0, 1, 2, 3), Request(32000, 1000, 4, 1000))
    return st


@pytest.mark.parametrize("kind,expected", [
    # pod: 2 GPUs, 4 CPUs. Node a: GPU 6/8 -> most 75, least 25; CPU 36/64 -> most 56 (56.25), least 43 (43.75).
    # Node b: GPU 2/8 -> most 25, least 75; CPU 4/64 -> most 6 (6.25), least 93 (93.75).
    # weights GPU 5, CPU 1: most a = (75*5 + 56)/6 = 71 (71.8), b = (25*5 + 6)/6 = 21 (21.8);
    # least a = (25*5 + 43)/6 = 28, b = (75*5 + 93)/6 = 78.
    ("MostAllocated", [71, 21]),
    ("LeastAllocated", [28, 78]),
])
def test_node_resources_fit_scores(kind, expected):
    p = NodeResourcesFit(kind, (("nvidia.com/gpu", 5), ("cpu", 1)))
    assert p.score(_state(), Request(4000, 1000, 2, 1000), np.array([0, 1]), None).tolist() == expected


def test_requested_to_capacity_ratio_shape():
    # shape (0, 0) -> (100, 10): score = utilization (scores x10). GPU only: a 75, b 25.
    p = NodeResourcesFit("RequestedToCapacityRatio", (("nvidia.com/gpu", 1),), ((0, 0), (100, 10)))
    assert p.score(_state(), Request(4000, 1000, 2, 1000), np.array([0, 1]), None).tolist() == [75, 25]
    # a falling shape (spread): (0, 10) -> (100, 0): 100 - utilization, with Go's truncating division
    assert broken_linear(((0, 100), (100, 0)), np.array([0, 33, 75, 100])).tolist() == [100, 67, 25, 0]


def test_node_without_gpus_ignores_the_gpu_weight():
    st = ClusterState([Node("cpu", "", 0, 64000, 256000)])
    p = NodeResourcesFit("MostAllocated", (("nvidia.com/gpu", 5), ("cpu", 1)))
    # only CPU counts: 16000/64000 -> 25
    assert p.score(st, Request(16000, 100, 0, 0), np.array([0]), None).tolist() == [25]


def test_an_extended_resource_the_pod_does_not_request_is_left_out_of_the_score():
    # resource_allocation.go calculateResourceAllocatableRequest returns (0, 0) for a scalar
    # resource with a zero pod request. Node b: empty, 8 GPUs; a CPU-only pod of 4 of 64 CPUs.
    # MostAllocated, GPU 5, CPU 1: the GPU is left out, score = CPU only = 4000*100//64000 = 6
    # (counting the GPU, 0 of 8 requested, it would be (0*5 + 6)//6 = 1).
    p = NodeResourcesFit("MostAllocated", (("nvidia.com/gpu", 5), ("cpu", 1)))
    assert p.score(_state(), Request(4000, 1000, 0, 0), np.array([1]), None).tolist() == [6]
    # a weight on an extended resource no node has (a MIG profile) scores nothing, as upstream
    q = NodeResourcesFit("MostAllocated", (("nvidia.com/mig-1g.10gb", 3), ("cpu", 1)))
    assert q.score(_state(), Request(4000, 1000, 2, 1000), np.array([1]), None).tolist() == [6]
    with pytest.raises(InputError, match="ephemeral-storage is not modelled"):
        NodeResourcesFit("MostAllocated", (("ephemeral-storage", 1),))


def test_cpu_only_pod_is_not_scored_on_the_gpus_of_a_gpu_node():
    """kube-scheduler leaves an extended resource the pod does not request out of the score
    (resource_allocation.go, resourceAllocationScorer.calculateResourceAllocatableRequest,
    v1.35). Found by the upstream oracle (tests/upstream): node a has 4 of 8 GPUs and 32 of
    64 CPUs in use; a pod asking 4 CPUs and no GPU scores on CPU alone."""
    p = NodeResourcesFit("MostAllocated", (("nvidia.com/gpu", 5), ("cpu", 1)))
    # CPU 36/64 -> 56 (56.25) on a, 4/64 -> 6 (6.25) on b; the GPUs (75 and 0 with weight 5) do not count
    assert p.score(_state(), Request(4000, 1000, 0, 0), np.array([0, 1]), None).tolist() == [56, 6]
    p = NodeResourcesFit("LeastAllocated", (("nvidia.com/gpu", 5), ("cpu", 1)))
    assert p.score(_state(), Request(4000, 1000, 0, 0), np.array([0, 1]), None).tolist() == [43, 93]


def test_nodes_from_a_csv_beside_the_scenario(tmp_path):
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn-a,64000,262144,2,P100\nn-b,32000,131072,0,\n")
    sc = _load(tmp_path, """apiVersion: lab01.course/v1alpha1
kind: Scenario
metadata: {name: csv}
spec:
  nodes: {csv: nodes.csv}
""")
    assert [(n.name, n.gpu_count, n.gpu_model, n.cpu_milli) for n in sc.nodes] == \
        [("n-a", 2, "P100", 64000), ("n-b", 0, "", 32000)]
