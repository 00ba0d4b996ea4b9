// Package etcdtest holds helpers shared by tests: a free loopback address, a throwaway CA
// with server and client certificates, and a real etcd binary run on 127.0.0.1.
package etcdtest

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr returns 127.0.0.1:port for a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
