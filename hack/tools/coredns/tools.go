//go:build tools

// Package tools pins the CoreDNS release the local cluster runs as its DNS server.
package tools

import _ "github.com/coredns/coredns"
