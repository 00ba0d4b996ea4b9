package levels

import "time"

// SetInsightsWait shortens level 4's waits for the in-process tests; the returned function
// puts them back.
func SetInsightsWait(wait, poll time.Duration) (restore func()) {
	oldWait, oldPoll := insightsWait, insightsPoll
	insightsWait, insightsPoll = wait, poll
	return func() { insightsWait, insightsPoll = oldWait, oldPoll }
}

// SetAutoPilotWaits shortens level 5's waits for the in-process tests (work bounds the
// maintenance and each healing); the returned function puts them back.
func SetAutoPilotWaits(work, events, poll time.Duration) (restore func()) {
	oldMaintenance, oldHeal, oldEvents, oldPoll := maintenanceWait, healWait, eventsWait, autoPilotPoll
	maintenanceWait, healWait, eventsWait, autoPilotPoll = work, work, events, poll
	return func() {
		maintenanceWait, healWait, eventsWait, autoPilotPoll = oldMaintenance, oldHeal, oldEvents, oldPoll
	}
}
