//go:build tools

// Package tools pins the versitygw release that serves S3 to the backup tests: a local
// process for the integration tests, an in-cluster Service for the e2e tests and benchmarks
// (make s3-up).
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
