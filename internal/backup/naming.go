package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// MaxNameLength bounds the names of the backups a schedule creates. Object names may
// have 253 characters, but a Job's name is copied into a label of its pods, where 63 is
// the limit, so a backup must fit in 63 for its Job to be named after it.
const MaxNameLength = 63

// NameForRun names the backup a schedule creates for a run: <schedule>-<run as Unix
// seconds>. The name is the same every time it is computed for the same run, so a
// controller that crashed after creating the backup finds it again instead of creating
// a second one.
//
// When that is longer than MaxNameLength the schedule's name is cut short and
// followed by 8 hex digits of its SHA-256, so that two long schedule names with the same
// beginning still give different backup names: <schedule, cut>-<hash>-<unix>.
func NameForRun(schedule string, run time.Time) string {
	suffix := "-" + strconv.FormatInt(run.Unix(), 10)
	if len(schedule)+len(suffix) <= MaxNameLength {
		return schedule + suffix
	}
	sum := sha256.Sum256([]byte(schedule))
	hash := "-" + hex.EncodeToString(sum[:4])
	keep := MaxNameLength - len(suffix) - len(hash)
	// The cut must not leave a "." before the hash's "-" ("a.-b" is not a valid name),
	// nor a doubled "-".
	return strings.TrimRight(schedule[:keep], "-.") + hash + suffix
}
