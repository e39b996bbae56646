package semver

import (
	"reflect"
	"testing"
)

func TestParseValid(t *testing.T) {
	cases := map[string]Version{
		"1.2.3":            {Major: 1, Minor: 2, Patch: 3},
		"v0.10.0":          {Minor: 10},
		"1.0.0-rc.1":       {Major: 1, Prerelease: []string{"rc", "1"}},
		"1.0.0+build.5":    {Major: 1, Build: []string{"build", "5"}},
		"2.0.0-beta+exp.1": {Major: 2, Prerelease: []string{"beta"}, Build: []string{"exp", "1"}},
	}
	for in, want := range cases {
		got, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, in := range []string{"", "1", "1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.0.0-", "1.0.0-01", "1.0.0-a..b", "1.0.0+b@d"} {
		if v, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, v)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{"1.2.3", "0.0.1-alpha.7", "3.0.0-rc.1+sha.5114f85"} {
		if got := MustParse(in).String(); got != in {
			t.Errorf("String(Parse(%q)) = %q", in, got)
		}
	}
}
