package levels

import "time"

// SetInsightsWait shortens level 4's waits (every one of them to wait) for the in-process
// tests; the returned function puts them back.
func SetInsightsWait(wait, poll time.Duration) (restore func()) {
	oldWait, oldPrometheus, oldAlert, oldPoll := insightsWait, prometheusWait, alertWait, insightsPoll
	insightsWait, prometheusWait, alertWait, insightsPoll = wait, wait, wait, poll
	return func() {
		insightsWait, prometheusWait, alertWait, insightsPoll = oldWait, oldPrometheus, oldAlert, oldPoll
	}
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

// SetUpgradeTiming quickens level 2 for the in-process tests: the writer writes every
// write, the members are sampled every sample (every sampleRestarting once one restarts),
// and writes may go unacknowledged for unavailable in all. The returned function puts them
// back.
func SetUpgradeTiming(write, sample, sampleRestarting, unavailable time.Duration) (restore func()) {
	oldWrite, oldSample, oldRestarting, oldLimit := writeEvery, sampleEvery, sampleEveryRestarting, unavailableLimit
	writeEvery, sampleEvery, sampleEveryRestarting, unavailableLimit = write, sample, sampleRestarting, unavailable
	return func() {
		writeEvery, sampleEvery, sampleEveryRestarting, unavailableLimit = oldWrite, oldSample, oldRestarting, oldLimit
	}
}
