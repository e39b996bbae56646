package size

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Size
	}{
		{"512", 512},
		{"1.5kB", 1500},
		{"4 MiB", 4 * MiB},
		{"2GB", 2 * GB},
		{"10 b", 10},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "kB", "3 parsecs"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestParseIEC(t *testing.T) {
	if got, _ := Parse("1GiB"); got != 1<<30 {
		t.Errorf("1GiB = %d", got)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[Size]string{0: "0B", 999: "999B", 1500: "1.5kB", 2 * GB: "2GB"} {
		if got := Format(in); got != want {
			t.Errorf("Format(%d) = %q, want %q", in, got, want)
		}
	}
}
