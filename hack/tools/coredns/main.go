// Command coredns is the local cluster's DNS server: CoreDNS's own server (coremain) with only
// the plugins hack/cluster/Corefile.in uses. The release's main imports every plugin, and with
// them the SDKs of AWS, Azure, Google Cloud and Datadog; leaving those out halves what a fresh
// machine compiles for DNS. A directive whose plugin is not imported here stops CoreDNS at
// start with "Unknown directive", so a Corefile change that needs one fails make cluster-up.
package main

import (
	"github.com/coredns/coredns/coremain"

	// The directives of hack/cluster/Corefile.in.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
