package etcdtest

import (
	"net"
	"testing"
)

// fakeListener is a listener that only has an address.
type fakeListener struct {
	net.Listener
	port int
}

func (l fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port} }
func (fakeListener) Close() error     { return nil }

// TestFreeAddrNeverTwice: when the kernel gives a port FreeAddr returned before (it may,
// once that listener is closed), FreeAddr asks again rather than return it twice.
func TestFreeAddrNeverTwice(t *testing.T) {
	ports := []int{40001, 40001, 40001, 40002, 40001, 40003}
	listen = func(string, string) (net.Listener, error) {
		p := ports[0]
		ports = ports[1:]
		return fakeListener{port: p}, nil
	}
	t.Cleanup(func() {
		listen = net.Listen
		handedOutMu.Lock()
		defer handedOutMu.Unlock()
		for _, p := range []int{40001, 40002, 40003} {
			delete(handedOut, p)
		}
	})
	var got []string
	for range 3 {
		got = append(got, FreeAddr(t))
	}
	want := []string{"127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FreeAddr returned %v, want %v", got, want)
		}
	}
}

// TestFreeAddrBinds: what FreeAddr returns can be listened on.
func TestFreeAddrBinds(t *testing.T) {
	for range 20 {
		addr := FreeAddr(t)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening on %s from FreeAddr: %v", addr, err)
		}
		_ = l.Close()
	}
}
