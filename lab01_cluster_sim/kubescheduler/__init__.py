"""kube-scheduler's node-selection plugins that Lab 01 models, one module per plugin, as in
``pkg/scheduler/framework/plugins/<name>/`` (Kubernetes v1.35.4):

- :mod:`.tainttoleration`: TaintToleration (Filter on NoSchedule/NoExecute taints, Score on
  PreferNoSchedule taints, and the taint eviction controller's NoExecute ``tolerationSeconds``);
- :mod:`.nodeaffinity`: NodeAffinity (``nodeSelector`` and required node affinity in Filter,
  preferred node affinity in Score);
- :mod:`.noderesources`: NodeResourcesFit's scoring strategies (LeastAllocated, MostAllocated,
  RequestedToCapacityRatio) as a placement policy.

Each is registered by name in :mod:`lab01_cluster_sim.registry`; nothing registers itself on
import. The matching rules (taints tolerated, node selector terms) live one floor down, in
:mod:`lab01_cluster_sim.corev1`, shared with Kueue's flavor assigner and Karpenter's
requirements.
"""
