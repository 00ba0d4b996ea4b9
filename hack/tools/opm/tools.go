//go:build tools

// Package tools pins opm, built with the json1 and containers_image_openpgp tags.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
