package main

// Kueue v0.17.0: one scheduling cycle (pkg/scheduler/scheduler.go, Scheduler.schedule) over
// pending workloads in their queues, as pkg/scheduler/scheduler_test.go TestSchedule sets it
// up: the cache (pkg/cache/scheduler) and the queue manager (pkg/cache/queue,
// NewManagerForUnitTests) over a fake client holding the workloads and LocalQueues, whose
// server-side-apply status patches are applied as strategic merges
// (utiltesting.TreatSSAAsStrategicMerge). The cycle takes the head of every ClusterQueue (queue
// order: priority, then creationTimestamp, then UID), nominates, orders and admits them,
// issues preemptions and reserves the capacity of a preemptor without candidates
// (reserveCapacityForUnreclaimablePreempt). schedule and setAdmissionRoutineWrapper are
// unexported; they are reached with go:linkname (allowed for a non-standard-library package).

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kueue/pkg/util/wait"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/util/routine"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

//go:linkname schedule sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).schedule
func schedule(s *scheduler.Scheduler, ctx context.Context) wait.SpeedSignal

//go:linkname setAdmissionRoutineWrapper sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).setAdmissionRoutineWrapper
func setAdmissionRoutineWrapper(s *scheduler.Scheduler, w routine.Wrapper)

// cycleCase is a kueueCase (its Workload and ClusterQueue left unset) with the LocalQueues
// and the pending workloads, in input order.
type cycleCase struct {
	kueueCase
	LocalQueues []kueue.LocalQueue `json:"localQueues"`
	Pending     []kueue.Workload   `json:"pending"`
}

type cycleWorkload struct {
	Name    string                       `json:"name"`
	Outcome string                       `json:"outcome"` // Admitted, Pending, or "" (not attempted)
	Flavors map[string]map[string]string `json:"flavors"`
	Counts  map[string]int32             `json:"counts"`
	Message string                       `json:"message"`
}

type cycleEviction struct {
	Name      string `json:"name"`
	Preemptor string `json:"preemptor"`
	Reason    string `json:"reason"`
}

type cycleResult struct {
	ID        any             `json:"id"`
	Workloads []cycleWorkload `json:"workloads"`
	Evicted   []cycleEviction `json:"evicted"`
}

var preemptedMessage = regexp.MustCompile(`^Preempted to accommodate a workload \(UID: ([^,]*), JobUID: [^)]*\) due to ([^;]*);`)

func runCycle(raw json.RawMessage) (any, error) {
	var c cycleCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("kueue-cycle case: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctrllog.IntoContext(context.Background(), logr.Discard()), 30*time.Second)
	defer cancel()
	log := logr.Discard()
	workloads := append(append([]kueue.Workload{}, c.Admitted...), c.Pending...)
	cl := utiltesting.NewClientBuilder().
		WithLists(&kueue.WorkloadList{Items: workloads}, &kueue.LocalQueueList{Items: c.LocalQueues}).
		WithObjects(utiltesting.MakeNamespaceWrapper("default").Obj()).
		WithStatusSubresource(&kueue.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: utiltesting.TreatSSAAsStrategicMerge}).
		Build()
	cache := schdcache.New(cl)
	queues := qcache.NewManagerForUnitTests(cl, cache)
	for i := range c.LocalQueues {
		if err := queues.AddLocalQueue(ctx, &c.LocalQueues[i]); err != nil {
			return nil, fmt.Errorf("localQueues[%d]: %v", i, err)
		}
	}
	for i := range c.ResourceFlavors {
		cache.AddOrUpdateResourceFlavor(log, &c.ResourceFlavors[i])
	}
	for i := range c.ClusterQueues {
		cq := &c.ClusterQueues[i]
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("clusterQueues[%d]: %v", i, err)
		}
		if err := queues.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("clusterQueues[%d] (queue manager): %v", i, err)
		}
		if err := cl.Create(ctx, cq.DeepCopy()); err != nil {
			return nil, fmt.Errorf("clusterQueues[%d] (client): %v", i, err)
		}
	}
	for i := range c.Cohorts {
		if err := cache.AddOrUpdateCohort(&c.Cohorts[i]); err != nil {
			return nil, fmt.Errorf("cohorts[%d]: %v", i, err)
		}
		queues.AddOrUpdateCohort(ctx, &c.Cohorts[i])
	}
	for i := range c.Admitted {
		if !cache.AddOrUpdateWorkload(log, &c.Admitted[i]) {
			return nil, fmt.Errorf("admitted[%d] (%s): not taken by the cache", i, c.Admitted[i].Name)
		}
	}
	// AddLocalQueue already queued the pending workloads it found in the client.
	clock := clocktesting.NewFakeClock(c.Now)
	s := scheduler.New(queues, cache, cl, record.NewFakeRecorder(1000), scheduler.WithFairSharing(c.FairSharing),
		scheduler.WithClock(nil, clock), scheduler.WithPreemptionExpectations(preemptexpectations.New()))
	var wg sync.WaitGroup
	setAdmissionRoutineWrapper(s, routine.NewWrapper(func() { wg.Add(1) }, func() { wg.Done() }))
	go queues.CleanUpOnContext(ctx)
	schedule(s, ctx)
	wg.Wait()

	snap, err := cache.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	admitted := map[string]*kueue.Admission{}
	for _, cq := range snap.ClusterQueues() {
		for _, w := range cq.Workloads {
			if workload.HasQuotaReservation(w.Obj) {
				admitted[w.Obj.Name] = w.Obj.Status.Admission
			}
		}
	}
	var list kueue.WorkloadList
	if err := cl.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list workloads: %v", err)
	}
	byName := map[string]*kueue.Workload{}
	uidName := map[string]string{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
		uidName[string(list.Items[i].UID)] = list.Items[i].Name
	}
	out := cycleResult{ID: c.ID, Workloads: []cycleWorkload{}, Evicted: []cycleEviction{}}
	for _, p := range c.Pending {
		w := cycleWorkload{Name: p.Name}
		if adm, ok := admitted[p.Name]; ok {
			w.Outcome = "Admitted"
			w.Flavors, w.Counts = map[string]map[string]string{}, map[string]int32{}
			for _, psa := range adm.PodSetAssignments {
				fl := map[string]string{}
				for r, f := range psa.Flavors {
					fl[string(r)] = string(f)
				}
				w.Flavors[string(psa.Name)] = fl
				if psa.Count != nil {
					w.Counts[string(psa.Name)] = *psa.Count
				}
			}
		} else if obj := byName[p.Name]; obj != nil {
			if cond := apimeta.FindStatusCondition(obj.Status.Conditions, kueue.WorkloadQuotaReserved); cond != nil {
				w.Outcome, w.Message = "Pending", cond.Message
			}
		}
		out.Workloads = append(out.Workloads, w)
	}
	for _, a := range c.Admitted {
		obj := byName[a.Name]
		if obj == nil {
			continue
		}
		cond := apimeta.FindStatusCondition(obj.Status.Conditions, kueue.WorkloadPreempted)
		if cond == nil || cond.Status != "True" {
			continue
		}
		e := cycleEviction{Name: a.Name, Reason: cond.Message}
		if m := preemptedMessage.FindStringSubmatch(cond.Message); m != nil {
			e.Preemptor, e.Reason = uidName[m[1]], m[2]
		}
		out.Evicted = append(out.Evicted, e)
	}
	sort.Slice(out.Evicted, func(i, j int) bool { return out.Evicted[i].Name < out.Evicted[j].Name })
	return out, nil
}
