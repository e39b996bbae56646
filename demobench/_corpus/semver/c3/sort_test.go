package semver

import (
	"strings"
	"testing"
)

func sortedStrings(t *testing.T, in ...string) string {
	t.Helper()
	vs, err := ParseAll(in)
	if err != nil {
		t.Fatal(err)
	}
	Sort(vs)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, " ")
}

func TestSortReleases(t *testing.T) {
	got := sortedStrings(t, "1.10.0", "1.2.0", "0.9.1", "1.2.0+build.7", "2.0.0")
	want := "0.9.1 1.2.0 1.2.0+build.7 1.10.0 2.0.0"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestSortPrereleaseOrder checks that pre-releases sort before their release, alpha before beta before rc.
func TestSortPrereleaseOrder(t *testing.T) {
	got := sortedStrings(t, "1.0.0", "1.0.0-rc.1", "1.0.0-beta", "1.0.0-alpha.1", "1.0.0-alpha")
	want := "1.0.0-alpha 1.0.0-alpha.1 1.0.0-beta 1.0.0-rc.1 1.0.0"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestLatestSkipsPrereleases(t *testing.T) {
	vs, _ := ParseAll([]string{"1.0.0", "1.1.0-rc.1", "1.0.5"})
	if v, ok := Latest(vs, false); !ok || v.String() != "1.0.5" {
		t.Fatalf("Latest = %v, %v", v, ok)
	}
	if v, ok := Latest(vs, true); !ok || v.String() != "1.1.0-rc.1" {
		t.Fatalf("Latest(pre) = %v, %v", v, ok)
	}
}

func TestBumpVersions(t *testing.T) {
	cases := []struct{ got, want string }{
		{MustParse("1.4.2").IncMajor().String(), "2.0.0"},
		{MustParse("2.0.0-rc.1").IncMajor().String(), "2.0.0"},
		{MustParse("1.4.2").IncMinor().String(), "1.5.0"},
		{MustParse("1.4.2+b.1").IncPatch().String(), "1.4.3"},
		{MustParse("1.4.3-rc.1").IncPatch().String(), "1.4.3"},
		{MustParse("1.4.3").WithPrerelease("beta", "2").String(), "1.4.3-beta.2"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %s, want %s", i, c.got, c.want)
		}
	}
}
