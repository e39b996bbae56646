package relnotes

import (
	"strings"
	"testing"
)

const changelog = `# Changelog

## Unreleased

- added: retry with jitter
- fixed: the config file is read once
  instead of on every request
- changed: default timeout is 30s

## v1.2.0

- added: something old
`

func TestParseUnreleased(t *testing.T) {
	got, err := Parse(strings.NewReader(changelog))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Added, "retry with jitter"},
		{Fixed, "the config file is read once instead of on every request"},
		{Changed, "default timeout is 30s"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseUnknownKind(t *testing.T) {
	_, err := Parse(strings.NewReader("## Unreleased\n- security: x\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown kind "security"`) {
		t.Errorf("err = %v", err)
	}
}
