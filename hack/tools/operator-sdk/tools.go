//go:build tools

// Package tools pins operator-sdk, built with the containers_image_openpgp tag.
package tools

import _ "github.com/operator-framework/operator-sdk/cmd/operator-sdk"
