package main

// Kueue v0.17.0: the flavor assignment and preemption targets of one head workload on a
// cache snapshot, as pkg/scheduler/scheduler.go getInitialAssignments computes them:
// flavorassigner.New(...).Assign; if the representative mode is Preempt,
// preemption.Preemptor.GetTargets; else, when the workload can be partially admitted,
// flavorassigner.NewPodSetReducer's search over smaller counts. The cache is Kueue's own
// (pkg/cache/scheduler.Cache) fed with the ResourceFlavors, ClusterQueues, Cohorts and
// admitted Workloads of the case, over a fake client from Kueue's test utilities
// (pkg/util/testing.NewClientBuilder, which registers the field indexes the cache uses).
// Feature gates are Kueue v0.17.0's defaults.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/scheduler/flavorassigner"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/fairsharing"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

type kueueCase struct {
	ID              any                    `json:"id"`
	Now             time.Time              `json:"now"`
	FairSharing     *config.FairSharing    `json:"fairSharing"`
	ResourceFlavors []kueue.ResourceFlavor `json:"resourceFlavors"`
	ClusterQueues   []kueue.ClusterQueue   `json:"clusterQueues"`
	Cohorts         []kueue.Cohort         `json:"cohorts"`
	Admitted        []kueue.Workload       `json:"admitted"`
	Workload        kueue.Workload         `json:"workload"`
	ClusterQueue    string                 `json:"clusterQueue"`
}

type kueuePodSet struct {
	Name    string            `json:"name"`
	Count   int32             `json:"count"`
	Flavors map[string]string `json:"flavors"`
	Modes   map[string]string `json:"modes"`
	Mode    string            `json:"mode"`
	Message string            `json:"message"`
}

type kueueResult struct {
	ID        any           `json:"id"`
	Mode      string        `json:"mode"`
	Borrowing int           `json:"borrowing"`
	PodSets   []kueuePodSet `json:"podSets"`
	Message   string        `json:"message"`
	Targets   []string      `json:"targets"`
	Reasons   []string      `json:"targetReasons"`
}

type partial struct {
	assignment flavorassigner.Assignment
	targets    []*preemption.Target
}

func runKueue(raw json.RawMessage) (any, error) {
	var c kueueCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("kueue case: %v", err)
	}
	ctx := context.Background()
	log := logr.Discard()
	cl := utiltesting.NewClientBuilder().Build()
	cache := schdcache.New(cl)
	for i := range c.ResourceFlavors {
		cache.AddOrUpdateResourceFlavor(log, &c.ResourceFlavors[i])
	}
	for i := range c.ClusterQueues {
		if err := cache.AddClusterQueue(ctx, &c.ClusterQueues[i]); err != nil {
			return nil, fmt.Errorf("clusterQueues[%d]: %v", i, err)
		}
	}
	for i := range c.Cohorts {
		if err := cache.AddOrUpdateCohort(&c.Cohorts[i]); err != nil {
			return nil, fmt.Errorf("cohorts[%d]: %v", i, err)
		}
	}
	for i := range c.Admitted {
		w := &c.Admitted[i]
		if w.UID == "" {
			w.UID = types.UID(w.Name) // the last tie-break of CandidatesOrdering
		}
		if !cache.AddOrUpdateWorkload(log, w) {
			return nil, fmt.Errorf("admitted[%d] (%s): not taken by the cache (no QuotaReserved condition or admission?)", i, w.Name)
		}
	}
	snap, err := cache.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	cq := snap.ClusterQueue(kueue.ClusterQueueReference(c.ClusterQueue))
	if cq == nil {
		return nil, fmt.Errorf("clusterQueue: %q is not an active ClusterQueue of the snapshot", c.ClusterQueue)
	}
	if c.Workload.UID == "" {
		c.Workload.UID = types.UID(c.Workload.Name)
	}
	wl := workload.NewInfo(&c.Workload)
	wl.ClusterQueue = kueue.ClusterQueueReference(c.ClusterQueue)
	recorder := record.NewFakeRecorder(1000)
	preemptor := preemption.New(cl, workload.Ordering{}, recorder, c.FairSharing, false,
		clocktesting.NewFakeClock(c.Now), nil, preemptexpectations.New(), nil)
	assigner := flavorassigner.New(wl, cq, snap.ResourceFlavors, fairsharing.Enabled(c.FairSharing),
		preemption.NewOracle(preemptor, snap), nil)

	// getInitialAssignments (pkg/scheduler/scheduler.go), without workload slices.
	assignment := assigner.Assign(log, nil)
	var targets []*preemption.Target
	switch assignment.RepresentativeMode() {
	case flavorassigner.Fit:
	case flavorassigner.Preempt:
		targets = preemptor.GetTargets(log, *wl, assignment, snap)
	}
	if assignment.RepresentativeMode() != flavorassigner.Fit && len(targets) == 0 &&
		features.Enabled(features.PartialAdmission) && wl.CanBePartiallyAdmitted() {
		reducer := flavorassigner.NewPodSetReducer(wl.Obj.Spec.PodSets, func(counts []int32) (*partial, bool) {
			a := assigner.Assign(log, counts)
			switch a.RepresentativeMode() {
			case flavorassigner.Fit:
				return &partial{assignment: a}, true
			case flavorassigner.Preempt:
				if t := preemptor.GetTargets(log, *wl, a, snap); len(t) > 0 {
					return &partial{assignment: a, targets: t}, true
				}
			}
			return nil, false
		})
		if p, found := reducer.Search(); found {
			assignment, targets = p.assignment, p.targets
		}
	}
	return kueueOut(c.ID, assignment, targets), nil
}

func kueueOut(id any, a flavorassigner.Assignment, targets []*preemption.Target) kueueResult {
	out := kueueResult{ID: id, Mode: a.RepresentativeMode().String(), Borrowing: a.Borrowing,
		Message: a.Message(), Targets: []string{}, Reasons: []string{}}
	for _, ps := range a.PodSets {
		p := kueuePodSet{Name: string(ps.Name), Count: ps.Count, Flavors: map[string]string{},
			Modes: map[string]string{}, Mode: ps.RepresentativeMode().String(), Message: ps.Status.Message()}
		for r, f := range ps.Flavors {
			if f == nil {
				continue
			}
			p.Flavors[string(r)] = string(f.Name)
			p.Modes[string(r)] = f.Mode.String()
		}
		out.PodSets = append(out.PodSets, p)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].WorkloadInfo.Obj.Name < targets[j].WorkloadInfo.Obj.Name })
	for _, t := range targets {
		out.Targets = append(out.Targets, t.WorkloadInfo.Obj.Name)
		out.Reasons = append(out.Reasons, t.Reason)
	}
	return out
}
