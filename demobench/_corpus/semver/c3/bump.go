package semver

// IncMajor returns the next major release: 1.4.2 -> 2.0.0, 2.0.0-rc.1 -> 2.0.0.
func (v Version) IncMajor() Version {
	if v.IsPrerelease() && v.Minor == 0 && v.Patch == 0 {
		return Version{Major: v.Major}
	}
	return Version{Major: v.Major + 1}
}

// IncMinor returns the next minor release: 1.4.2 -> 1.5.0, 1.5.0-rc.1 -> 1.5.0.
func (v Version) IncMinor() Version {
	if v.IsPrerelease() && v.Patch == 0 {
		return Version{Major: v.Major, Minor: v.Minor}
	}
	return Version{Major: v.Major, Minor: v.Minor + 1}
}

// IncPatch returns the next patch release: 1.4.2 -> 1.4.3, 1.4.3-rc.1 -> 1.4.3.
func (v Version) IncPatch() Version {
	if v.IsPrerelease() {
		return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
	}
	return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}
}

// WithPrerelease returns v with its pre-release identifiers replaced and its build metadata dropped.
func (v Version) WithPrerelease(ids ...string) Version {
	out := Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
	if len(ids) > 0 {
		out.Prerelease = append([]string(nil), ids...)
	}
	return out
}
