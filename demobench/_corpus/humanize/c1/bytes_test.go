package humanize

import "testing"

func TestBytesSI(t *testing.T) {
	cases := map[uint64]string{
		0:          "0 B",
		9:          "9 B",
		10:         "10 B",
		999:        "999 B",
		1000:       "1.0 kB",
		1500:       "1.5 kB",
		82854982:   "83 MB",
		1000000000: "1.0 GB",
	}
	for in, want := range cases {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestBytesIEC(t *testing.T) {
	cases := map[uint64]string{
		1024:     "1.0 KiB",
		82854982: "79 MiB",
		1 << 30:  "1.0 GiB",
	}
	for in, want := range cases {
		if got := IBytes(in); got != want {
			t.Errorf("IBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	cases := map[string]uint64{
		"42":       42,
		"42 MB":    42000000,
		"42mb":     42000000,
		"1.5 GiB":  1610612736,
		"1,024 kB": 1024000,
	}
	for in, want := range cases {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MB", "12 parsecs"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) succeeded", bad)
		}
	}
}
