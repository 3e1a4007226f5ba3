package main

// Karpenter v1.13.0 (sigs.k8s.io/karpenter; the newest release the Go proxy serves that
// builds with Go 1.26.8): which instance types of a NodePool can be launched for a pod,
// from pkg/scheduling's exported Requirements and Taints and pkg/utils/resources.Fits,
// in the steps of pkg/controllers/provisioning/scheduling: NewNodeClaimTemplate (the
// pool's requirements plus its template labels and the karpenter.sh/nodepool label),
// NodeClaim.CanAdd (taints tolerated, requirements Compatible with
// AllowUndefinedWellKnownLabels), filterInstanceTypesByRequirements (per type:
// compatible = Requirements.Intersects, fits = resources.Fits(requests, Allocatable()),
// an available offering compatible with the requirements). Those three functions are
// unexported in the provisioning package, so their few lines are restated here; the
// rules they apply (Requirements, Taints, Fits) are Karpenter's own code.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/utils/resources"
)

type karpOffering struct {
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Available    bool                             `json:"available"`
	Price        float64                          `json:"price"`
}

type karpInstanceType struct {
	Name         string                           `json:"name"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Capacity     corev1.ResourceList              `json:"capacity"`
	Offerings    []karpOffering                   `json:"offerings"`
}

type karpCase struct {
	ID            any                `json:"id"`
	NodePool      karpv1.NodePool    `json:"nodePool"`
	InstanceTypes []karpInstanceType `json:"instanceTypes"`
	Pod           corev1.Pod         `json:"pod"`
}

type karpType struct {
	Name        string `json:"name"`
	Compatible  bool   `json:"compatible"`
	Fits        bool   `json:"fits"`
	HasOffering bool   `json:"hasOffering"`
}

type karpResult struct {
	ID           any        `json:"id"`
	Tolerates    bool       `json:"tolerates"`
	TaintError   string     `json:"taintError,omitempty"`
	Compatible   bool       `json:"compatible"`
	CompatError  string     `json:"compatibleError,omitempty"`
	Types        []karpType `json:"instanceTypes"`
	Launchable   []string   `json:"launchable"`
}

func runKarpenter(raw json.RawMessage) (any, error) {
	var c karpCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("karpenter case: %v", err)
	}
	tmpl := c.NodePool.Spec.Template
	reqs := scheduling.NewNodeSelectorRequirementsWithMinValues(tmpl.Spec.Requirements...)
	labels := map[string]string{karpv1.NodePoolLabelKey: c.NodePool.Name}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	reqs.Add(scheduling.NewLabelRequirements(labels).Values()...)

	out := karpResult{ID: c.ID, Types: []karpType{}, Launchable: []string{}}
	if err := scheduling.Taints(tmpl.Spec.Taints).ToleratesPod(&c.Pod); err != nil {
		out.TaintError = err.Error()
	} else {
		out.Tolerates = true
	}
	podReqs := scheduling.NewPodRequirements(&c.Pod)
	if err := reqs.Compatible(podReqs, scheduling.AllowUndefinedWellKnownLabels); err != nil {
		out.CompatError = err.Error()
	} else {
		out.Compatible = true
	}
	base := scheduling.NewRequirements(reqs.Values()...)
	base.Add(podReqs.Values()...)
	requests := resources.RequestsForPods(&c.Pod)
	for _, t := range c.InstanceTypes {
		it := &cloudprovider.InstanceType{
			Name:         t.Name,
			Requirements: scheduling.NewNodeSelectorRequirements(t.Requirements...),
			Capacity:     t.Capacity,
			Overhead:     &cloudprovider.InstanceTypeOverhead{},
		}
		kt := karpType{Name: t.Name}
		kt.Compatible = it.Requirements.Intersects(base) == nil
		kt.Fits = resources.Fits(requests, it.Allocatable())
		for _, of := range t.Offerings {
			if of.Available && base.IsCompatible(scheduling.NewNodeSelectorRequirements(of.Requirements...),
				scheduling.AllowUndefinedWellKnownLabels) {
				kt.HasOffering = true
				break
			}
		}
		out.Types = append(out.Types, kt)
		if out.Tolerates && out.Compatible && kt.Compatible && kt.Fits && kt.HasOffering {
			out.Launchable = append(out.Launchable, t.Name)
		}
	}
	return out, nil
}
