package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
)

// earlierAttemptsSpent is the Spent an earlier attempt of this activity left in its heartbeat details (nil: none).
func earlierAttemptsSpent(ctx context.Context) map[string]float64 {
	if !activity.IsActivity(ctx) || !activity.HasHeartbeatDetails(ctx) {
		return nil
	}
	var u api.CallUsage
	if activity.GetHeartbeatDetails(ctx, &u) != nil {
		return nil
	}
	return u.Spent
}

// spentDetails are what a heartbeat of the attempt records: its spent, for the next attempt (nil when none).
func spentDetails(c *steps.CallUsage) []any {
	if s := c.Spent(); s != nil {
		return []any{api.CallUsage{Spent: s}}
	}
	return nil
}

// flushSpent records a heartbeat with the attempt's spent now, so that the next attempt reads it even when this one
// fails before the heartbeat goroutine's next tick.
func flushSpent(ctx context.Context, c *steps.CallUsage) {
	if d := spentDetails(c); d != nil && activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, d...)
	}
}
