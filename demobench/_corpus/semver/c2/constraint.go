package semver

import (
	"fmt"
	"strings"
)

// Constraint is a set of version ranges: a version satisfies it when it lies in at least one range. Write one as
// comparisons joined by commas (all must hold) and alternatives joined by "||":
//
//	">=1.2.0, <2.0.0"
//	"~1.4 || ^2.1.0"
//	"!=1.3.5"
type Constraint struct {
	text   string
	ranges [][]comparison // OR of ANDs
}

type comparison struct {
	op string // "=", "!=", ">", ">=", "<", "<="
	v  Version
}

// ParseConstraint reads a constraint. Shorthands are expanded into plain comparisons:
//
//	~1.2.3  is  >=1.2.3, <1.3.0   (patch-level changes)
//	~1.2    is  >=1.2.0, <1.3.0
//	~1      is  >=1.0.0, <2.0.0
//	^1.2.3  is  >=1.2.3, <2.0.0   (changes that do not modify the left-most non-zero number)
//	1.2     is  >=1.2.0, <1.3.0   (a partial version matches everything it leaves open)
func ParseConstraint(s string) (*Constraint, error) {
	c := &Constraint{text: strings.TrimSpace(s)}
	if c.text == "" {
		return nil, &ParseError{Input: s, Reason: "empty constraint"}
	}
	for _, alt := range strings.Split(c.text, "||") {
		var and []comparison
		for _, term := range strings.Split(alt, ",") {
			term = strings.TrimSpace(term)
			if term == "" {
				return nil, &ParseError{Input: s, Reason: "empty comparison"}
			}
			cmps, err := parseTerm(term)
			if err != nil {
				return nil, &ParseError{Input: s, Reason: err.Error()}
			}
			and = append(and, cmps...)
		}
		c.ranges = append(c.ranges, and)
	}
	return c, nil
}

// MustParseConstraint is ParseConstraint for constants; it panics on a bad constraint.
func MustParseConstraint(s string) *Constraint {
	c, err := ParseConstraint(s)
	if err != nil {
		panic(err)
	}
	return c
}

// String returns the constraint as it was written.
func (c *Constraint) String() string { return c.text }

// Check reports whether v satisfies the constraint.
func (c *Constraint) Check(v Version) bool {
	for _, and := range c.ranges {
		ok := true
		for _, cmp := range and {
			if !cmp.holds(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (cmp comparison) holds(v Version) bool {
	c := Compare(v, cmp.v)
	switch cmp.op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	}
	return false
}

var operators = []string{">=", "<=", "!=", "==", ">", "<", "=", "~", "^"}

// parseTerm expands one comparison, tilde or caret range into plain comparisons.
func parseTerm(term string) ([]comparison, error) {
	op := ""
	for _, o := range operators {
		if strings.HasPrefix(term, o) {
			op = o
			break
		}
	}
	rest := strings.TrimSpace(term[len(op):])
	v, given, err := parsePartial(rest)
	if err != nil {
		return nil, err
	}
	switch op {
	case "~":
		upper := Version{Major: v.Major, Minor: v.Minor + 1}
		if given == 1 {
			upper = Version{Major: v.Major + 1}
		}
		return []comparison{{">=", v}, {"<", upper}}, nil
	case "^":
		upper := Version{Major: v.Major + 1}
		return []comparison{{">=", v}, {"<", upper}}, nil
	case "", "=", "==":
		switch given {
		case 1:
			return []comparison{{">=", v}, {"<", Version{Major: v.Major + 1}}}, nil
		case 2:
			return []comparison{{">=", v}, {"<", Version{Major: v.Major, Minor: v.Minor + 1}}}, nil
		}
		return []comparison{{"=", v}}, nil
	}
	if given < 3 && (op == ">" || op == "<=") {
		// ">1.2" means above every 1.2.x; "<=1.2" includes every 1.2.x.
		next := Version{Major: v.Major + 1}
		if given == 2 {
			next = Version{Major: v.Major, Minor: v.Minor + 1}
		}
		if op == ">" {
			return []comparison{{">=", next}}, nil
		}
		return []comparison{{"<", next}}, nil
	}
	return []comparison{{op, v}}, nil
}

// parsePartial reads "1", "1.2" or a full version, and says how many of the three numbers were given.
func parsePartial(s string) (Version, int, error) {
	s = strings.TrimPrefix(s, "v")
	core := s
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	n := strings.Count(core, ".") + 1
	switch n {
	case 1:
		s = strings.Replace(s, core, core+".0.0", 1)
	case 2:
		s = strings.Replace(s, core, core+".0", 1)
	case 3:
	default:
		return Version{}, 0, fmt.Errorf("too many numbers in %q", s)
	}
	v, err := Parse(s)
	if err != nil {
		return Version{}, 0, fmt.Errorf("bad version in comparison: %q", s)
	}
	return v, n, nil
}
