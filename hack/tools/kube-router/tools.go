//go:build tools

// Package tools pins the kube-router release whose firewall enforces NetworkPolicy on the
// local cluster (its bridge network plugin does not). Only the firewall runs: no routing,
// no service proxy, no CNI.
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
