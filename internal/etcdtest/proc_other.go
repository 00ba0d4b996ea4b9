//go:build !linux

package etcdtest

import "os/exec"

// killWithParent does nothing where the kernel cannot kill a child with its parent; t.Cleanup
// still stops etcd at the end of every test that completes.
func killWithParent(*exec.Cmd) {}
