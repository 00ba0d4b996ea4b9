// Package cron reads the schedules of the API (a backup schedule's spec.schedule, a
// defragmentation schedule) and says when a run is due. It is pure: the time comes from the
// caller.
//
// [Parse] accepts what the CRDs' validation accepts: five cron fields in UTC or an @
// descriptor, evaluated by robfig/cron/v3 as Kubernetes CronJobs are, without time zones,
// @every, names or "?". A test reads the generated CRD and checks that its regular
// expressions and Parse agree on a corpus of expressions, so the API cannot drift from the
// code. Parse also refuses what a regular expression cannot see: reversed ranges and
// schedules that never fire.
//
// [Due] takes the time from its caller. After missed runs (the operator was down, the
// schedule was suspended) it returns only the latest of them: one run catches up, never a
// burst.
package cron
