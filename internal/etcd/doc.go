// Package etcd is the operator's only door to an etcd cluster's own API: membership,
// leadership, status, health and a few key-value calls.
//
// The controller and the membership planner never call go.etcd.io/etcd/client/v3 directly;
// they talk to the narrow Client interface defined here, for three reasons:
//
//   - Planner and controller tests run against the deterministic, in-memory fake in
//     internal/etcd/fake instead of a real cluster, so every membership decision can be
//     tested, including the refusals etcd returns (learner not caught up, too many learners,
//     change would lose quorum).
//   - Every call is bounded by the reconcile's context and, in addition, by a per-call cap
//     (CallTimeout, or HealthTimeout for Health), so one unreachable member cannot stall a
//     reconcile worker for longer than that: the effective deadline is whichever comes first.
//   - Only this package knows clientv3: its types never leak out (Member and MemberStatus are
//     our own), its errors are classified here (IsLearnerNotReady and friends), and its
//     connection quirks (which calls must reach a particular member, how to dial that member)
//     are handled in one place.
//
// The interface is modelled on cluster-api's kubeadm control plane etcd client, narrowed to
// what etcdpilot needs.
package etcd
