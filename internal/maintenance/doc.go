// Package maintenance decides, as a pure function of what the operator observed, the one
// next maintenance step an etcd cluster needs: compact, defragment one member, or disarm a
// NOSPACE alarm. It never does I/O. The controller observes, calls Plan, carries out at most
// the single Action it returns, and observes again on the next pass. Plan keeps no state of
// its own: whatever it must know about earlier passes (the revision last compacted to,
// whether a scheduled run is due) comes in with the observation, so the operator may stop
// at any point and pick up where the cluster is.
//
// Defragmentation rewrites a member's database file without its free pages. The member
// stops serving while it does, so members are defragmented one at a time, followers before
// the leader (which would otherwise hand leadership over mid-way), and only while the
// whole cluster is healthy and at its desired size. Learners are never defragmented: etcd
// does not serve the call on them. A CORRUPT alarm stops all of this until a person has
// looked: rewriting or compacting data that may be wrong would only hide the evidence.
//
// A NOSPACE alarm (a member's database reached the quota, and etcd refuses writes) does not
// block maintenance: it is what maintenance resolves. The recovery is the one etcd
// documents (compact, defragment every member, then disarm the alarm once every member is
// well below the quota), except that the compaction keeps the history etcd's
// auto-compaction is configured to keep, as long as it fits: compacting to the current
// revision would make every watcher that resumes from an older revision relist. In
// auto-compaction mode revision, Plan first compacts to the current revision less the
// retention; in mode periodic, etcd's own compactor keeps its time window, which Plan
// cannot map to a revision, and Plan leaves the history to it. The whole history goes,
// with a compaction to the current revision, only when it does not fit: when the members'
// size in use is at PressurePercent of the quota or more, so that even a defragmentation
// would leave their files at the storage autoscaler's trigger (the least size in use a
// member reports counts: a member that did not serve a compaction may count the pages it
// freed as in use until it commits a write), or when every member is defragmented and one
// is still too close to the quota to disarm (its size in use was not reported, say). When
// every member is defragmented after that and one is still too close, the data itself does
// not fit and Plan says so; raising the quota is for a person, or for another part of the
// operator.
//
// Before NOSPACE, a file at PressurePercent of the quota (the storage autoscaler's
// threshold, 75 %) is under quota pressure. With storage autoscaling able to raise the
// quota, the two share the work: Plan defragments such a member when that brings its file
// PressureReclaimable under the trigger, and the autoscaler, told which members Plan is
// defragmenting (Defragmenting), waits for those and raises the quota for the others.
// Either way a file at the trigger gets one of the two.
package maintenance
