// Command kube-oracle answers the cases of kind "scheduler" and "karpenter" with the upstream code
// (protocol and versions: package serve).
package main

import "github.com/gpu-course/tools/upstream/serve"

func main() {
	serve.Run(map[string]serve.Handler{"scheduler": runScheduler, "karpenter": runKarpenter})
}
