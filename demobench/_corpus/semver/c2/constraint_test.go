package semver

import "testing"

func checkAll(t *testing.T, constraint string, in, out []string) {
	t.Helper()
	c, err := ParseConstraint(constraint)
	if err != nil {
		t.Fatalf("ParseConstraint(%q): %v", constraint, err)
	}
	for _, s := range in {
		if !c.Check(MustParse(s)) {
			t.Errorf("%s should satisfy %q", s, constraint)
		}
	}
	for _, s := range out {
		if c.Check(MustParse(s)) {
			t.Errorf("%s should not satisfy %q", s, constraint)
		}
	}
}

func TestConstraintSimple(t *testing.T) {
	checkAll(t, ">=1.2.0, <2.0.0", []string{"1.2.0", "1.9.9"}, []string{"1.1.9", "2.0.0"})
	checkAll(t, "!=1.3.5", []string{"1.3.4", "1.3.6"}, []string{"1.3.5"})
	checkAll(t, "1.2", []string{"1.2.0", "1.2.9"}, []string{"1.3.0", "1.1.9"})
	checkAll(t, "<1.0.0 || >=3.0.0", []string{"0.9.0", "3.1.0"}, []string{"1.0.0", "2.5.0"})
}

func TestConstraintTilde(t *testing.T) {
	checkAll(t, "~1.2.3", []string{"1.2.3", "1.2.9"}, []string{"1.3.0", "1.2.2"})
	checkAll(t, "~1.2", []string{"1.2.0", "1.2.7"}, []string{"1.3.0"})
	checkAll(t, "~1", []string{"1.0.0", "1.9.0"}, []string{"2.0.0", "0.9.0"})
}

func TestConstraintCaretMajor(t *testing.T) {
	checkAll(t, "^1.2.3", []string{"1.2.3", "1.9.0"}, []string{"2.0.0", "1.2.2"})
	checkAll(t, "^2", []string{"2.0.0", "2.5.1"}, []string{"3.0.0", "1.9.9"})
}

func TestConstraintInvalid(t *testing.T) {
	for _, s := range []string{"", ">=1.2.3,", ">=x", "~1.2.3.4", "||"} {
		if _, err := ParseConstraint(s); err == nil {
			t.Errorf("ParseConstraint(%q) succeeded", s)
		}
	}
}
