// Package autoscale decides, as a pure function of what the operator observed, whether an
// etcd cluster needs more room for its data: raise the quota (--quota-backend-bytes), grow
// the members' volumes first so that a larger quota fits, or nothing; and when a ceiling
// stops the growth while the data needs it, it says so, for a condition, an event and an
// alert. It never does I/O. The controller keeps a History of the database size per
// cluster in memory, calls Trend and Plan, records the one Decision, and rolls it out like
// any change of the spec: the quota one member at a time, the claims one at a time. Plan
// keeps no state: the quota and volume in force come in with each call, so a decision
// already made and not yet rolled out is made again, identically, on the next pass.
//
// # When
//
// etcd refuses writes (the NOSPACE alarm) once a member's database file would pass the
// quota, so Plan measures the file. The file holds free pages as well as data in use, and
// runs ahead of the data by them: by 16 to 25 % with values of 256 KiB under a 24 MiB
// quota, enough to meet NOSPACE before the data in use reaches 75 % of the quota. Free
// pages are for a defragmentation to give back, and a quota raised for them would ratchet
// up for room a defragmentation returns (nothing here ever shrinks). So a member that
// maintenance (internal/maintenance) is defragmenting, in this pass or the next ones, counts
// by the size in use its file shrinks to; every other member counts by its file (Used).
// Maintenance defragments a file at the threshold (its quota-pressure trigger is the same
// 75 %) when that brings the file far enough under it; a member whose data in use is
// itself near the threshold, or that cannot be defragmented now (defragmentation Disabled,
// a scheduled run not due, defragmented less than 10 minutes ago), keeps counting by its
// file, and the quota rises. While a defragmentation is to come for a file at the
// threshold, Plan says so (ReasonDefragmentationPending).
//
// Plan acts when the largest Used is at ThresholdPercent of the quota (75 % by default: the
// warning tier of OpenShift's etcdDatabaseQuotaLowSpace alerts, which warn at 75 % and page
// at 85 %), or when its growth trend says the quota is reached within FullWithin (6 hours by
// default: before the etcd mixin's etcdExcessiveDatabaseGrowth alert, which warns when
// predict_linear over 4 hours reaches the quota within 4 hours, so that the operator acts
// before anyone is warned). Both alerts are the etcd mixin's (etcd's own Prometheus rules).
//
// # The trend
//
// Trend is the least-squares slope of Used over the History, as Prometheus's
// predict_linear computes it, and over the same 4 hours as the mixin's alert (TrendWindow).
// The window must be long: etcd compacts its history every hour or more often (periodic
// auto-compaction compacts every hour, or every retention period when that is shorter),
// so the size in use is a sawtooth that climbs for up to an hour and drops at each
// compaction, and a file drops at each defragmentation. Over one tooth the slope is the
// write rate, not the growth; over n teeth a least-squares fit leaves about 1/n² of it.
// Trend therefore wants MinTrendSpan (2 hours) of samples, and reports growth only: a
// flat or shrinking database has no trend.
//
// # How much
//
// The quota rises by half (GrowthPercent), or until the data fills two thirds of the
// threshold (half the new quota at the default 75 %), or to what lasts twice FullWithin at
// the trend (RunwayFactor), whichever is most, rounded up to QuotaStep. Each step restarts
// every member, so one step must leave the next well away: at a steady growth, the next
// is due FullWithin later at the soonest, by the threshold or by the trend. The quota
// never passes its ceiling, nor etcd's recommended 8 GiB (EtcdMaxQuotaBytes; etcd's
// documentation on space quotas).
//
// # Room on the volume
//
// A member's volume holds more than the database file: the write-ahead log (etcd keeps 5
// files of 64 MB and preallocates the next one), the snapshot files, and, for a while, a
// second copy of the database: a defragmentation writes the data in use to a new file
// next to the old one before it replaces it, and a member that falls behind receives the
// leader's whole database as a file next to its own. Both copies hold at most the quota.
// A quota q therefore fits a volume v when 2q + WALReserveBytes is within UsablePercent of
// v (QuotaFitsVolume, VolumeFor): the members run as non-root, so ext4's 5 % of blocks
// reserved for root, and the file system's own metadata, are not theirs. This is stricter
// than the API's rule that the quota be smaller than the volume: the default 2 GiB quota
// needs 5 GiB volumes. A quota already in force on a smaller volume is left as it is;
// Plan raises no quota that does not fit.
//
// When the next quota does not fit, Plan grows the claims first, to VolumeFor the quota
// rounded up to a whole GiB (VolumeStep) and at most to the volume ceiling, when the
// StorageClass allows expansion; the next pass, once the claims have grown, raises the
// quota. The etcd operators we studied do not grow volumes on their own; their users ask
// for it (cozystack/etcd-operator#210 proposes orphaning the
// StatefulSet and patching each claim, gardener/etcd-druid#481 recreating the claims).
// OpenShift lets the quota be raised, never lowered, as here. When neither
// can grow, Plan raises the quota as far as the volume allows, and then reports the
// ceiling: AtCeiling, with what the user can do.
package autoscale
