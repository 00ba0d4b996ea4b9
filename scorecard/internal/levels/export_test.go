package levels

import "time"

// SetInsightsWait shortens level 4's waits for the in-process tests; the returned function
// puts them back.
func SetInsightsWait(wait, poll time.Duration) (restore func()) {
	oldWait, oldPoll := insightsWait, insightsPoll
	insightsWait, insightsPoll = wait, poll
	return func() { insightsWait, insightsPoll = oldWait, oldPoll }
}
