package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// ObjectText returns n bytes of JSON-like text shaped like the Kubernetes objects an etcd
// usually holds: repeated field names and label values, with random UIDs, versions and
// numbers. It is the same text for the same n, so benchmarks that fill etcd with it
// compress alike from run to run; random bytes would be the worst case of every
// compression, and no etcd holds them.
func ObjectText(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []string{"Pod", "ConfigMap", "Secret", "Service", "Endpoints", "Lease", "Event"}
	apps := []string{"web", "api", "worker", "cache", "db", "ingress", "metrics", "batch"}
	var sb strings.Builder
	sb.Grow(n + 1024)
	for sb.Len() < n {
		app := apps[rng.IntN(len(apps))]
		fmt.Fprintf(&sb, `{"kind":%q,"apiVersion":"v1","metadata":{"name":"%s-%x","namespace":"team-%d","uid":"%08x-%04x-%04x-%04x-%012x",`+
			`"resourceVersion":"%d","labels":{"app":%q,"tier":"backend","pod-template-hash":"%x"}},"spec":{"nodeName":"node-%d",`+
			`"containers":[{"name":%q,"image":"registry.example.com/%s:v1.%d.%d","resources":{"requests":{"cpu":"%dm","memory":"%dMi"}}}]},`+
			`"status":{"phase":"Running","podIP":"10.%d.%d.%d","startTime":"2026-%02d-%02dT%02d:%02d:%02dZ"}}`+"\n",
			kinds[rng.IntN(len(kinds))], app, rng.Uint32(), rng.IntN(40), rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<16), rng.IntN(1<<16), rng.Uint64()>>16,
			rng.IntN(1<<30), app, rng.Uint32(), rng.IntN(200), app, app, rng.IntN(30), rng.IntN(10), 50*rng.IntN(40), 64*rng.IntN(32),
			rng.IntN(256), rng.IntN(256), rng.IntN(256), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
	}
	return sb.String()[:n]
}
