// Package tuning decides the raft timing of an etcd cluster (heartbeat interval and
// election timeout) from the round trips its members measure to one another. It backs the
// Auto raft timing of an EtcdCluster, and holds the fixed profiles Standard and Slower.
// It does no I/O beyond reading a metrics body it is handed, and knows nothing of
// Kubernetes.
//
// What is measured. Every etcd member probes each peer every 4 s, keeps a smoothed round
// trip per peer, and records that smoothed value in the histogram
// etcd_network_peer_round_trip_time_seconds{To=<peer ID>} every 30 s (every 5 s while the
// peer does not answer), once for each of its two probers, the stream's and the
// pipeline's (etcd's rafthttp, probing_status.go and transport.go). From etcd 3.5 the buckets run from 0.1 ms to 3.2768 s, doubling; some
// older releases stop at 0.8192 s. The operator scrapes each member's metrics port,
// ParsePeerRoundTrip sums the member's series over its peers, and a Window turns the
// scrapes into an Observation of what all members observed over the last DefaultWindow:
// the difference of each member's counters (Delta), merged (Merge), whole and in Parts. A
// member that restarted starts afresh, as its counters do.
//
// What is decided. Plan sizes the heartbeat for the p99 of those round trips, as
// etcd's tuning guide asks: a heartbeat near the round trip (0.5-1.5×), an election
// timeout of at least ten times it and at most 50000 ms, the same on every member
// (etcd's tuning guide, content/en/docs/v3.5/tuning.md on etcd.io). etcd refuses an
// election timeout below five heartbeats (etcd's embed/config.go);
// ForRoundTrip keeps ten. The heartbeat is never below Standard, etcd's default of
// 100 ms. The fixed profiles are OpenShift's controlPlaneHardwareSpeed values (its etcd
// operator's pkg/hwspeedhelpers/hwhelper.go): Standard 100/1000 ms and Slower 500/2500 ms.
// The p99 is the figure the etcd mixin's etcdMemberCommunicationSlow alert watches, over
// 5m and for 10m (etcd's own Prometheus mixin), which sets the window.
//
// Changing the timing restarts every member, so a change must answer a lasting shift, not
// noise. Plan keeps the current timing while the target stays inside a band around it
// (RaisePercent, LowerPercent); raises it only once every part of the window asks for it,
// and only as far as all of them do; lowers it only on a full window; and never changes
// it twice within one window. The caller resets the Window after each rollout, so that
// the next decision rests on round trips measured under the new timing. Plan itself
// keeps no state: the caller passes the current timing and the time since its last
// change, which it records in the cluster's status.
package tuning
