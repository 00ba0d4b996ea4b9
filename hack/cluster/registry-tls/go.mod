module github.com/etcdpilot/etcdpilot/hack/cluster/registry-tls

go 1.22
