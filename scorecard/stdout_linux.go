package main

import (
	"fmt"
	"os"
	"syscall"
)

// claimStdout keeps the process's standard output for the result alone: it returns a
// duplicate of it, then points file descriptors 1 and 2 at /dev/null. Whatever a library
// prints on its own (klog, gRPC, a stray fmt.Print) then goes nowhere instead of into the
// pod log, where it would break the JSON scorecard parses.
func claimStdout() (*os.File, error) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = null.Close() }() // descriptors 1 and 2 keep /dev/null open
	saved, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("duplicating standard output: %w", err)
	}
	syscall.CloseOnExec(saved)
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(null.Fd()), fd, 0); err != nil {
			return nil, fmt.Errorf("redirecting descriptor %d: %w", fd, err)
		}
	}
	return os.NewFile(uintptr(saved), "result"), nil
}
