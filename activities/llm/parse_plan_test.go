package llm

import (
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const hostilePlan = `{"searches": [{"kind": "definition", "strings": ["Target"]}]}`

// TestParseSearchPlanFindsPlansPastBrokenJSON places a plan after, and inside, JSON that fails to decode: the
// parser skips what fails and still finds the plan.
func TestParseSearchPlanFindsPlansPastBrokenJSON(t *testing.T) {
	want := []Search{{"definition", []string{"Target"}}}
	for name, text := range map[string]string{
		"after unbalanced brackets":       strings.Repeat("[", 50) + " then " + hostilePlan,
		"inside an array that never ends": `[1, ` + hostilePlan + `, 2, `,
		"inside an array cut by prose":    `[` + hostilePlan + ` and more words]`,
		"after a broken object":           `{"a": x} ` + hostilePlan,
		"after a quote left open":         `[he said "hi] ` + hostilePlan,
		"after a string with a newline":   "{\"a\": \"b\nc\"} " + hostilePlan,
		"deep inside a failed value":      `[[[1, ` + hostilePlan + `, oops`,
		"after a mismatched close":        `[1, 2} ` + hostilePlan,
	} {
		plan, err := ParseSearchPlan(text, 4, 8)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(plan.Searches, want) {
			t.Errorf("%s: got %+v, want %+v", name, plan.Searches, want)
		}
	}
}

// TestParseSearchPlanIsLinear runs the parser on answers made to be quadratic for a parser that tries every "["
// or "{" to the end of the answer (the plan at the end, so that every candidate is tried), at two sizes, one eight
// times the other. The bytes it allocates, which do not depend on the machine's load, must grow about eight times
// (under 12; the parser of issue 28 copied the rest of the answer at every bracket: 64 times); its time, the CPU time of
// the parsing thread (onThreadCPU: other processes taking the cores do not count) at its best of five runs of each
// size, must stay under 48, below the 64 times of a
// quadratic parser (a linear one takes 8-20 times here: the larger input falls out of the caches, and a loaded
// machine adds noise).
func TestParseSearchPlanIsLinear(t *testing.T) {
	shapes := map[string]func(n int) string{
		"open brackets":        func(n int) string { return strings.Repeat("[", n) },
		"open braces":          func(n int) string { return strings.Repeat("{", n) },
		"open arrays of items": func(n int) string { return strings.Repeat("[1, ", n) },
		"open objects":         func(n int) string { return strings.Repeat(`{"a": `, n) },
		"broken nested":        func(n int) string { return strings.Repeat("[x", n) },
		"closed small values":  func(n int) string { return strings.Repeat("[1] ", n) },
		"deep valid nesting":   func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) },
	}
	parse := func(text string) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var plan SearchPlan
		var err error
		took := onThreadCPU(func() { plan, err = ParseSearchPlan(text, 4, 8) })
		runtime.ReadMemStats(&after)
		if err != nil || len(plan.Searches) != 1 {
			t.Fatalf("no plan found: %v %+v", err, plan)
		}
		return took, after.TotalAlloc - before.TotalAlloc
	}
	const n, k, allocBound, timeBound = 12000, 8, 12.0, 48.0
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		small, large := shapes[name](n)+hostilePlan, shapes[name](k*n)+hostilePlan
		var smallTime, largeTime time.Duration
		var smallAlloc, largeAlloc uint64
		for i := range 5 {
			st, sa := parse(small)
			lt, la := parse(large)
			if i == 0 || st < smallTime {
				smallTime = st
			}
			if i == 0 || lt < largeTime {
				largeTime = lt
			}
			smallAlloc, largeAlloc = sa, la
			if float64(lt) > 4*timeBound*float64(st) { // a quadratic parser: minutes more would not change that
				break
			}
		}
		timeRatio := float64(largeTime) / float64(max(smallTime, time.Microsecond))
		allocRatio := float64(largeAlloc) / float64(max(smallAlloc, 1))
		t.Logf("%s: %d units %v %d B, %d units %v %d B: time x%.1f, bytes x%.1f", name, n, smallTime, smallAlloc,
			k*n, largeTime, largeAlloc, timeRatio, allocRatio)
		if allocRatio > allocBound {
			t.Errorf("%s: %dx the input allocated %.1fx the bytes (%d, %d); a linear parser about %dx", name, k,
				allocRatio, smallAlloc, largeAlloc, k)
		}
		if timeRatio > timeBound {
			t.Errorf("%s: %dx the input took %.1fx the time (%v, %v); a quadratic parser takes %dx", name, k,
				timeRatio, smallTime, largeTime, k*k)
		}
	}
}

// BenchmarkParseSearchPlanHostile is the quadratic answer of issue 28: 40,000 "[" before the plan.
func BenchmarkParseSearchPlanHostile(b *testing.B) {
	text := strings.Repeat("[", 96000) + hostilePlan
	for b.Loop() {
		if _, err := ParseSearchPlan(text, 4, 8); err != nil {
			b.Fatal(err)
		}
	}
}
