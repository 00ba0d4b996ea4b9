// Package pki is the certificate authority the operator runs for each etcd cluster in
// TLS mode OperatorCA. It creates the CA, issues the certificates etcd and its clients
// use, and answers the questions the reconciler asks about existing certificates: is
// this one about to expire, was it signed by the current CA, does it still cover the
// cluster's names. It does no I/O and has no Kubernetes imports; the caller stores the
// PEM it returns in Secrets (ca.crt, tls.crt, tls.key: the kubernetes.io/tls layout
// plus the CA certificate).
//
// # One CA per EtcdCluster
//
// Every EtcdCluster gets its own self-signed CA rather than one operator-wide CA. A
// client certificate for one cluster is then worthless against any other cluster, a
// leaked CA key compromises one cluster only, and deleting a cluster retires its trust
// root with it.
//
// The CA signs two kinds of certificate:
//
//   - one member certificate, shared by all members, served on both the client port (2379)
//     and the peer port (2380), and presented by members when they dial each other;
//   - client certificates, for the operator itself and for users (status.clientSecret).
//
// # A shared certificate with wildcard names
//
// The member certificate names no individual member. Their SANs are a
// wildcard over the cluster's headless peer Service (*.<peer-service>.<namespace>.svc,
// which resolves <member>.<peer-service>.<namespace>.svc to each pod) plus the fixed
// names of the cluster's Services. Members can therefore be added, removed and replaced
// without issuing anything: a new pod mounts the same Secret as its siblings and is
// already covered. Per-member certificates would force a Secret write on every scale
// event and make the next member's start wait for it. The price is that all members
// hold the same key, which costs little: every member pod already mounts the same
// Secrets, so they are one trust domain anyway.
//
// A wildcard covers exactly one DNS label, as TLS defines it (see [CoversNames]), so
// each spelling of a member's name needs its own wildcard: *.<peer-service>.<namespace>.svc
// does not cover <member>.<peer-service>.<namespace>.svc.cluster.local.
//
// Server certificates (IssueServer) carry the ServerAuth and the ClientAuth extended key
// usage. Peers dial each other with the member certificate as their client certificate,
// and etcd's in-process gRPC gateway dials the member's own client port with it, so it
// would be refused by a member requiring client certificates if it could only serve.
//
// # Keys
//
// All keys are ECDSA P-256, stored as PKCS#8 PEM. P-256 is supported by every TLS stack
// etcd clients use, its signatures and handshakes are much cheaper than RSA's, and
// generating a key takes microseconds, so issuing certificates inside a reconcile is
// harmless.
//
// # Time and renewal
//
// Every function that depends on the clock takes now as a parameter, so the reconciler
// decides what time it is and tests can pin it. Certificates are back-dated by one
// hour (NotBefore = now - 1h) so that a member whose clock lags the operator's does
// not reject a freshly issued certificate, and a certificate never outlives the CA that
// signed it (it would be unusable after the CA expires anyway). The reconciler re-issues
// a certificate when [NeedsRenewal] says it is expiring, when [CA.Verify] says it was
// signed by a different CA (the CA was rotated), or when [CoversNames] says the
// cluster's names have changed.
package pki
