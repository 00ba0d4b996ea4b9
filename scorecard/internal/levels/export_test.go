package levels

import "time"

// SetInsightsWait shortens level 4's waits for the in-process tests; the returned function
// puts them back.
func SetInsightsWait(wait, poll time.Duration) (restore func()) {
	oldWait, oldPoll := insightsWait, insightsPoll
	insightsWait, insightsPoll = wait, poll
	return func() { insightsWait, insightsPoll = oldWait, oldPoll }
}

// SetAutoPilotWaits shortens level 5's waits for the in-process tests; the returned
// function puts them back.
func SetAutoPilotWaits(maintenance, events, poll time.Duration) (restore func()) {
	oldMaintenance, oldEvents, oldPoll := maintenanceWait, eventsWait, autoPilotPoll
	maintenanceWait, eventsWait, autoPilotPoll = maintenance, events, poll
	return func() { maintenanceWait, eventsWait, autoPilotPoll = oldMaintenance, oldEvents, oldPoll }
}
