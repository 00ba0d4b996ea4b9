package framework

import (
	"context"
	"net"
)

// ReadLocal is the Env's serializable read when Env.ReadLocal is nil, for the test against
// a real etcd.
var ReadLocal = readLocal

// PodDialer is the dial of a member's probe (ProbeMembers), for its test.
func (e *Env) PodDialer(namespace, member string) func(ctx context.Context, address string) (net.Conn, error) {
	return e.podDialer(namespace, member)
}
