package semver

import "testing"

func TestCompareCore(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.2.3", "1.2.3", 0},
		{"1.2.3", "1.2.4", -1},
		{"1.10.0", "1.9.0", 1},
		{"2.0.0", "1.99.99", 1},
		{"1.0.0+build.1", "1.0.0+build.2", 0},
	}
	for _, c := range cases {
		got, err := CompareStrings(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestComparePrereleaseVsRelease(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0-alpha", "1.0.0", -1},
		{"1.0.0", "1.0.0-rc.1", 1},
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha", "1.0.0-beta", -1},
		{"1.0.0-1", "1.0.0-alpha", -1},
	}
	for _, c := range cases {
		got, err := CompareStrings(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestComparePrereleaseNumeric(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0-alpha.10", "1.0.0-alpha.9", 1},
		{"1.0.0-rc.2", "1.0.0-rc.11", -1},
		{"1.0.0-beta.11", "1.0.0-beta.11", 0},
		{"1.0.0-100", "1.0.0-99", 1},
		{"2.0.0-rc.1.10", "2.0.0-rc.1.2", 1},
	}
	for _, c := range cases {
		got, err := CompareStrings(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSortNumericPrereleases(t *testing.T) {
	got := sortedStrings(t, "1.0.0-rc.10", "1.0.0-rc.9", "1.0.0-rc.1", "1.0.0")
	want := "1.0.0-rc.1 1.0.0-rc.9 1.0.0-rc.10 1.0.0"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
