package main

// kube-scheduler v1.35.4: NodeResourcesFit, TaintToleration and NodeAffinity, each built
// with its exported constructor (noderesources.NewFit, tainttoleration.New,
// nodeaffinity.New) and run through PreFilter/Filter and PreScore/Score/NormalizeScore
// as the scheduling framework runs them (pkg/scheduler/schedule_one.go findNodesThatFit
// and prioritizeNodes), one cycle state per case, every node of the case scored (the
// framework scores only the nodes that pass every filter; the TaintToleration and
// NodeAffinity normalizations are over the nodes given).
//
// Feature gates: the v1.35 defaults of the gates these plugins read (pkg/features/
// kube_features.go at v1.35.4), stated in schedFeatures because k8s.io/kubernetes'
// and Kueue's gate registries both define DynamicResourceAllocation and cannot live in
// one binary's DefaultFeatureGate. The DRA gates are off: no ResourceClaims exist here.

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
)

type schedNode struct {
	Node v1.Node  `json:"node"`
	Pods []v1.Pod `json:"pods"`
}

type schedCase struct {
	ID              any                    `json:"id"`
	ScoringStrategy *config.ScoringStrategy `json:"scoringStrategy"`
	Pod             v1.Pod                 `json:"pod"`
	Nodes           []schedNode            `json:"nodes"`
}

type pluginNode struct {
	Filter  bool     `json:"filter"`
	Reasons []string `json:"reasons,omitempty"`
	Score   *int64   `json:"score,omitempty"` // after NormalizeScore; absent when PreScore skipped
}

type schedResult struct {
	ID      any                      `json:"id"`
	Nodes   []string                 `json:"nodes"`
	Plugins map[string][]pluginNode `json:"plugins"`
}

func schedFeatures() feature.Features {
	return feature.Features{
		EnableSidecarContainers:         true, // GA 1.33
		EnableInPlacePodVerticalScaling: true, // GA 1.35
		EnableSchedulingQueueHint:       true, // GA 1.34
		EnablePodLevelResources:         true, // beta 1.34, on by default
		// alpha in 1.35, off by default: TaintTolerationComparisonOperators,
		// InPlacePodLevelResourcesVerticalScaling; DRA: see the file comment.
	}
}

func runScheduler(raw json.RawMessage) (any, error) {
	var c schedCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("scheduler case: %v", err)
	}
	if c.ScoringStrategy == nil {
		return nil, fmt.Errorf("scoringStrategy: required")
	}
	ctx := context.Background()
	fts := schedFeatures()
	infos := make([]fwk.NodeInfo, len(c.Nodes))
	names := make([]string, len(c.Nodes))
	for i := range c.Nodes {
		pods := make([]*v1.Pod, len(c.Nodes[i].Pods))
		for j := range c.Nodes[i].Pods {
			p := c.Nodes[i].Pods[j]
			p.Spec.NodeName = c.Nodes[i].Node.Name
			pods[j] = &p
		}
		ni := framework.NewNodeInfo(pods...)
		node := c.Nodes[i].Node
		ni.SetNode(&node)
		infos[i] = ni
		names[i] = node.Name
	}
	fit, err := noderesources.NewFit(ctx, &config.NodeResourcesFitArgs{ScoringStrategy: c.ScoringStrategy}, nil, fts)
	if err != nil {
		return nil, fmt.Errorf("scoringStrategy: %v", err)
	}
	taint, err := tainttoleration.New(ctx, nil, nil, fts)
	if err != nil {
		return nil, err
	}
	affinity, err := nodeaffinity.New(ctx, &config.NodeAffinityArgs{}, nil, fts)
	if err != nil {
		return nil, err
	}
	out := schedResult{ID: c.ID, Nodes: names, Plugins: map[string][]pluginNode{}}
	for _, pl := range []fwk.Plugin{fit, taint, affinity} {
		res, err := runPlugin(ctx, pl, &c.Pod, infos)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", pl.Name(), err)
		}
		out.Plugins[pl.Name()] = res
	}
	return out, nil
}

// runPlugin runs one plugin's extension points over every node, in the framework's
// order: PreFilter (a Skip status skips Filter), Filter per node, PreScore over the
// nodes that passed every filter of this plugin (a Skip skips Score), Score per node,
// NormalizeScore over the scored nodes.
func runPlugin(ctx context.Context, pl fwk.Plugin, pod *v1.Pod, nodes []fwk.NodeInfo) ([]pluginNode, error) {
	state := framework.NewCycleState()
	res := make([]pluginNode, len(nodes))
	skipFilter := false
	if pf, ok := pl.(fwk.PreFilterPlugin); ok {
		r, st := pf.PreFilter(ctx, state, pod, nodes)
		switch {
		case st.IsSkip():
			skipFilter = true
		case !st.IsSuccess():
			// The pod fits no node (e.g. NodeAffinity with an empty term list).
			for i := range res {
				res[i] = pluginNode{Filter: false, Reasons: st.Reasons()}
			}
			return res, nil
		case r != nil && !r.AllNodes():
			for i := range res {
				res[i].Filter = r.NodeNames.Has(nodes[i].Node().Name)
			}
		default:
			for i := range res {
				res[i].Filter = true
			}
		}
		if skipFilter {
			for i := range res {
				res[i].Filter = true
			}
		}
	} else {
		for i := range res {
			res[i].Filter = true
		}
	}
	if f, ok := pl.(fwk.FilterPlugin); ok && !skipFilter {
		for i, ni := range nodes {
			if !res[i].Filter {
				continue
			}
			st := f.Filter(ctx, state, pod, ni)
			res[i].Filter = st.IsSuccess()
			if !st.IsSuccess() {
				res[i].Reasons = st.Reasons()
			}
		}
	}
	sp, ok := pl.(fwk.ScorePlugin)
	if !ok {
		return res, nil
	}
	if ps, ok := pl.(fwk.PreScorePlugin); ok {
		st := ps.PreScore(ctx, state, pod, nodes)
		if st.IsSkip() {
			return res, nil
		}
		if !st.IsSuccess() {
			return nil, st.AsError()
		}
	}
	scores := make(fwk.NodeScoreList, 0, len(nodes))
	for _, ni := range nodes {
		s, st := sp.Score(ctx, state, pod, ni)
		if !st.IsSuccess() {
			return nil, st.AsError()
		}
		scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if ext := sp.ScoreExtensions(); ext != nil {
		if st := ext.NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
			return nil, st.AsError()
		}
	}
	for i := range scores {
		s := scores[i].Score
		res[i].Score = &s
	}
	return res, nil
}
