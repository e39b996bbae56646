package semver

import "strings"

// Compare returns -1, 0 or +1 as a is lower than, equal to or higher than b in semantic-version precedence.
// Build metadata is ignored. Pre-release versions have lower precedence than the release: 1.0.0-rc.1 < 1.0.0.
func Compare(a, b Version) int {
	if c := cmpUint(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpUint(a.Minor, b.Minor); c != 0 {
		return c
	}
	if c := cmpUint(a.Patch, b.Patch); c != 0 {
		return c
	}
	return comparePrerelease(a.Prerelease, b.Prerelease)
}

// Less reports whether a has lower precedence than b.
func Less(a, b Version) bool { return Compare(a, b) < 0 }

// Equal reports whether a and b have the same precedence (build metadata is ignored).
func Equal(a, b Version) bool { return Compare(a, b) == 0 }

// CompareStrings parses and compares two versions.
func CompareStrings(a, b string) (int, error) {
	va, err := Parse(a)
	if err != nil {
		return 0, err
	}
	vb, err := Parse(b)
	if err != nil {
		return 0, err
	}
	return Compare(va, vb), nil
}

// comparePrerelease orders pre-release identifier lists: no identifiers (a release) is highest; otherwise the
// identifiers are compared one by one and a shorter list that is a prefix of a longer one is lower.
func comparePrerelease(a, b []string) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareIdentifier(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

// compareIdentifier orders two pre-release identifiers: numeric identifiers are compared as numbers and are lower
// than alphanumeric ones, which are compared in ASCII order.
func compareIdentifier(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		// Numeric identifiers have no leading zeros, so the longer one is the larger number.
		if c := cmpInt(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
