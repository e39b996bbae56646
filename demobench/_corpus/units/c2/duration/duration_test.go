package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"90m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"2d", 2 * Day},
		{"1w", Week},
		{"1.5d", 36 * time.Hour},
		{"-3d", -3 * Day},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "d", "3 fortnights"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[time.Duration]string{
		90 * time.Minute:         "1h30m",
		2 * time.Hour:            "2h",
		Week + 2*Day + time.Hour: "1w2d1h",
		3 * Day:                  "3d",
		-45 * time.Second:        "-45s",
	} {
		if got := Format(in); got != want {
			t.Errorf("Format(%v) = %q, want %q", in, got, want)
		}
	}
}
