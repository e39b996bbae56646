package semver

// MarshalText writes v in canonical form, so versions encode as JSON strings.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText parses a version from text, so JSON strings decode into versions.
func (v *Version) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// MarshalText writes the constraint as it was written.
func (c *Constraint) MarshalText() ([]byte, error) { return []byte(c.text), nil }

// UnmarshalText parses a constraint from text.
func (c *Constraint) UnmarshalText(b []byte) error {
	p, err := ParseConstraint(string(b))
	if err != nil {
		return err
	}
	*c = *p
	return nil
}
