// Package consistency decides, as pure functions, whether the members of an etcd cluster
// hold the same data, and which member disagrees with the majority when they do not.
//
// The operator asks every member for etcd's HashKV at one revision that every member has
// applied (CommonRevision): the hash of the key-value history from the last compaction up
// to that revision, which members with the same data report identically. Judge compares
// the hashes, together with the CORRUPT alarms etcd's own corruption checks raised, and
// says one of three things: the members agree; a named minority disagrees with a majority
// of the voting members that agree among themselves (that minority is to be fenced and
// replaced); or nothing can be told this time (too few comparable hashes, or no majority
// agrees), in which case nothing may be touched.
package consistency
