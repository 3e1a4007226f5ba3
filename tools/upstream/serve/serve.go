// Package serve is the loop of the upstream oracles (cmd/kube-oracle, cmd/kueue-oracle),
// which answer placement and admission questions with the upstream projects' own Go
// code, so that the course simulator (lab01_cluster_sim) can be checked against it on
// generated cases (tests/upstream/). Two binaries, because k8s.io/kubernetes and Kueue
// both register a DynamicResourceAllocation feature gate in the process-wide
// DefaultFeatureGate, with different specs, and panic at init when linked together:
//
//   - kube-oracle, kinds "scheduler" (kube-scheduler v1.35.4's NodeResourcesFit,
//     TaintToleration, NodeAffinity; cmd/kube-oracle/scheduler.go) and "karpenter"
//     (sigs.k8s.io/karpenter v1.13.0's pkg/scheduling; cmd/kube-oracle/karpenter.go);
//   - kueue-oracle, kind "kueue" (Kueue v0.17.0's flavor assigner and preemptor for one
//     head workload on a cache snapshot; cmd/kueue-oracle/kueue.go).
//
// Input: JSON lines on stdin, one case per line, each with a "kind"; output: one JSON
// line per case, in order.
// A malformed case gets {"error": "..."} on its line, and so does a case on which the
// upstream code panics ("upstream panic: ..."); the process goes on. A malformed line of
// JSON ends the process with exit status 2.
package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

type caseHeader struct {
	Kind string `json:"kind"`
	ID   any    `json:"id,omitempty"`
}

// Handler answers one case (the whole JSON line); an error is reported on the case's line.
type Handler func(raw json.RawMessage) (any, error)

// Run answers cases from stdin until EOF with the handler of each case's "kind".
func Run(handlers map[string]Handler) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer out.Flush()
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err.Error() == "EOF" {
				return
			}
			fmt.Fprintf(os.Stderr, "%s: stdin: not JSON: %v\n", os.Args[0], err)
			out.Flush()
			os.Exit(2)
		}
		var h caseHeader
		var result any
		var err error
		if err = json.Unmarshal(raw, &h); err == nil {
			if handle, ok := handlers[h.Kind]; ok {
				result, err = answer(handle, raw)
			} else {
				kinds := make([]string, 0, len(handlers))
				for k := range handlers {
					kinds = append(kinds, k)
				}
				sort.Strings(kinds)
				err = fmt.Errorf("kind: expected one of %v, got %q", kinds, h.Kind)
			}
		}
		if err != nil {
			result = map[string]any{"id": h.ID, "error": err.Error()}
		}
		if err := enc.Encode(result); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stdout: %v\n", os.Args[0], err)
			os.Exit(2)
		}
		if h.Kind != "" && in.Buffered() == 0 {
			out.Flush() // answer at once when the caller waits for this line
		}
	}
}

// answer runs one handler; a panic in the upstream code becomes an error on the case's
// line starting "upstream panic:" (Kueue v0.17.0 has one, see tests/upstream), so one bad
// case does not end the session.
func answer(handle Handler, raw json.RawMessage) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("upstream panic: %v", r)
		}
	}()
	return handle(raw)
}
