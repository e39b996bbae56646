package cli

// pauseGuard watches progress samples and calls stop once every running issue waits for the spend cap: nothing can
// move until the cap is raised, so the starter should say so and exit instead of waiting forever.
type pauseGuard struct {
	stop func()
	seen int
	// hit is the sample that made it stop (nil until then); read after the watch has ended.
	hit *progressEvent
}

func (g *pauseGuard) observe(ev progressEvent) {
	if g.hit != nil {
		return
	}
	// Twice in a row: a starter that just asked paused issues to resume sees them paused until they have checked
	// the cap again.
	if ev.IssuesPaused == 0 || ev.IssuesPaused < ev.IssuesRunning {
		g.seen = 0
		return
	}
	if g.seen++; g.seen >= 2 {
		g.hit = &ev
		g.stop()
	}
}
