//go:build tools

// Package tools pins the local-path-provisioner release the local cluster uses as its
// default StorageClass.
package tools

import _ "github.com/rancher/local-path-provisioner"
