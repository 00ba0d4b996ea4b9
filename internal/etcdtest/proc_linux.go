package etcdtest

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill the started process when the test binary dies, so a
// test killed by its timeout does not leave etcd running; t.Cleanup covers every other end.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
