module github.com/etcdpilot/etcdpilot/hack/cluster/pause

go 1.22
