package ratelimit

import "testing"

func TestParseRate(t *testing.T) {
	cases := map[string]float64{
		"10/s":   10,
		"30/m":   0.5,
		"3600/h": 1,
		"5/10s":  0.5,
		"0.5/s":  0.5,
		" 2 / s": 2,
	}
	for in, want := range cases {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"10", "x/s", "10/fortnight", "-1/s", "1/0s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded", bad)
		}
	}
}

func TestFormatRate(t *testing.T) {
	cases := map[float64]string{10: "10/s", 0.5: "30/m", 1.0 / 3600: "1/h"}
	for in, want := range cases {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
}
