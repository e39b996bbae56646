// Package semver parses, compares and constrains semantic versions (https://semver.org, version 2.0.0).
package semver

import (
	"strconv"
	"strings"
)

// Version is a parsed semantic version. The zero value is 0.0.0.
type Version struct {
	Major, Minor, Patch uint64
	// Prerelease holds the dot-separated pre-release identifiers ("alpha", "1" for 1.0.0-alpha.1).
	Prerelease []string
	// Build holds the build metadata identifiers; they do not take part in comparisons.
	Build []string
}

// Parse reads a version such as "1.2.3", "v1.2.3", "1.0.0-rc.1" or "1.0.0+build.5". A leading "v" is allowed.
func Parse(s string) (Version, error) {
	orig := s
	s = strings.TrimPrefix(s, "v")
	var v Version
	if s == "" {
		return v, &ParseError{Input: orig, Reason: "empty version"}
	}
	if i := strings.IndexByte(s, '+'); i >= 0 {
		build := s[i+1:]
		s = s[:i]
		ids, err := splitIdentifiers(orig, build, false)
		if err != nil {
			return Version{}, err
		}
		v.Build = ids
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		pre := s[i+1:]
		s = s[:i]
		ids, err := splitIdentifiers(orig, pre, true)
		if err != nil {
			return Version{}, err
		}
		v.Prerelease = ids
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, &ParseError{Input: orig, Reason: "want MAJOR.MINOR.PATCH"}
	}
	nums := make([]uint64, 3)
	for i, p := range parts {
		n, err := parseNumber(p)
		if err != nil {
			return Version{}, &ParseError{Input: orig, Reason: err.Error()}
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, nil
}

// MustParse is Parse for constants; it panics on a bad version.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func parseNumber(p string) (uint64, error) {
	if p == "" {
		return 0, errEmptyNumber
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, errLeadingZero
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, errNotNumber
		}
	}
	return strconv.ParseUint(p, 10, 64)
}

// splitIdentifiers splits a pre-release or build string at dots and checks each identifier.
func splitIdentifiers(orig, s string, prerelease bool) ([]string, error) {
	ids := strings.Split(s, ".")
	for _, id := range ids {
		if id == "" {
			return nil, &ParseError{Input: orig, Reason: "empty identifier"}
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return nil, &ParseError{Input: orig, Reason: "invalid character " + strconv.QuoteRune(rune(c))}
			}
		}
		if prerelease && isNumeric(id) && len(id) > 1 && id[0] == '0' {
			return nil, &ParseError{Input: orig, Reason: "numeric pre-release identifier with a leading zero"}
		}
	}
	return ids, nil
}

// isNumeric reports whether an identifier consists of digits only.
func isNumeric(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}

// String formats v in canonical form, without a "v" prefix.
func (v Version) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(v.Major, 10))
	b.WriteByte('.')
	b.WriteString(strconv.FormatUint(v.Minor, 10))
	b.WriteByte('.')
	b.WriteString(strconv.FormatUint(v.Patch, 10))
	if len(v.Prerelease) > 0 {
		b.WriteByte('-')
		b.WriteString(strings.Join(v.Prerelease, "."))
	}
	if len(v.Build) > 0 {
		b.WriteByte('+')
		b.WriteString(strings.Join(v.Build, "."))
	}
	return b.String()
}

// IsPrerelease reports whether v has pre-release identifiers.
func (v Version) IsPrerelease() bool { return len(v.Prerelease) > 0 }
