package semver

import "sort"

// Collection is a list of versions that sorts by precedence, lowest first.
type Collection []Version

func (c Collection) Len() int           { return len(c) }
func (c Collection) Less(i, j int) bool { return Less(c[i], c[j]) }
func (c Collection) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }

// Sort orders versions by precedence, lowest first. Versions of equal precedence keep their order.
func Sort(vs []Version) { sort.Stable(Collection(vs)) }

// Latest returns the highest version of vs, skipping pre-releases unless includePre is set. ok is false when no
// version qualifies.
func Latest(vs []Version, includePre bool) (v Version, ok bool) {
	for _, c := range vs {
		if c.IsPrerelease() && !includePre {
			continue
		}
		if !ok || Less(v, c) {
			v, ok = c, true
		}
	}
	return v, ok
}

// ParseAll parses every string, stopping at the first bad one.
func ParseAll(ss []string) ([]Version, error) {
	out := make([]Version, 0, len(ss))
	for _, s := range ss {
		v, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
