//go:build tools

// Package tools pins OLM v0 (olm-operator, catalog-operator, package-server and the
// copy-content/cpb helpers of its util image) and opm, the operator-registry release OLM
// itself requires. One module for both, so that the packages they share (Kubernetes' client,
// controller-runtime, gRPC, containers/image) are compiled once; both are built with the
// json1 and containers_image_openpgp tags for the same reason.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/copy-content"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/package-server"
	_ "github.com/operator-framework/operator-lifecycle-manager/util/cpb"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
