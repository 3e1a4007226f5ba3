// Command kueue-oracle answers the cases of kind "kueue" with the upstream code
// (protocol and versions: package serve).
package main

import "github.com/gpu-course/tools/upstream/serve"

func main() {
	serve.Run(map[string]serve.Handler{"kueue": runKueue, "kueue-cycle": runCycle})
}
