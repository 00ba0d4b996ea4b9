// Package framework is what etcdpilot's tests do to a Kubernetes cluster, one framework
// for the scorecard tests (which run in a pod of the cluster) and the e2e suite (which runs
// on the cluster's machine): create an EtcdCluster, wait for a state of it, resize it,
// destroy a member, read its events, back it up to a claim, talk to its etcd (through the
// client Service, or to one member alone for its status and its own data, with the
// operator's narrow client or etcd's own), follow its client Secret as a reloading client
// does, read its members' and the operator's metrics and its monitoring objects, ask a
// Prometheus what it scrapes, evaluates and alerts of it, and delete everything again.
//
// Where the test runs decides how it reaches the members (reach.go): from a pod, by the
// Services' DNS names; from the machine (Env.PodNetwork set), by the pods' IPs inside the
// pod network and the client Service's ClusterIP, the member's certificate checked against
// the client Service's name.
//
// Every EtcdCluster, EtcdBackup and claim created through an Env is remembered and removed
// by Env.Cleanup, which the test runner calls after every test, passed or failed, with a
// budget of its own. The decisions (is the cluster settled, which member to destroy, which
// keys were lost, does a backup's status describe a usable artifact, which samples a
// metrics answer holds, was every member defragmented and the leader last, is an error
// etcd's NOSPACE, are the cluster's and the operator's targets up in Prometheus, are the
// cluster's rules loaded and healthy, is an alert active for it, do the members' sampled
// versions show one restarted at a time and health-gated, how long were writes
// unacknowledged, do the members read alone show a divergence, which member does an event
// blame) are pure functions over the observed objects, tested without a cluster.
// GETs of metrics endpoints and of Prometheus's HTTP API go through Env.HTTP, which tests
// replace.
package framework
