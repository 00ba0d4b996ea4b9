// Package etcdtest holds helpers shared by tests: a free loopback address, a throwaway CA
// with server and client certificates, and a real etcd binary run on 127.0.0.1.
package etcdtest

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

var (
	// listen opens the listener FreeAddr takes a port from; a test replaces it.
	listen = net.Listen

	handedOutMu sync.Mutex
	// handedOut are the ports FreeAddr returned in this process.
	handedOut = map[int]bool{}
)

// FreeAddr returns 127.0.0.1:port for a port that was free a moment ago and that it never
// returned before in this process. A caller often asks for two addresses before it binds
// either (a member's peer and client URLs), and the kernel may give the port of a listener
// just closed to the next: the same port twice makes the second bind fail.
func FreeAddr(t testing.TB) string {
	t.Helper()
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	for range 100 {
		l, err := listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut[port] {
			handedOut[port] = true
			return "127.0.0.1:" + strconv.Itoa(port)
		}
	}
	t.Fatal("FreeAddr: 100 free ports in a row were ones it had returned before")
	return ""
}
