package safename

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are ids a dataset may hold: each must map to a name of its own.
var hostile = []string{
	"acme__humanize-1", "a/b", "a_b", "a\\b", ".", "..", "...", "", "ünïcødé-1", "line\nbreak", "nul\x00byte",
	"tab\tid", "\xff\xfe not utf-8", "sp ace", "a~b", strings.Repeat("x", 10_000), strings.Repeat("x", 10_001),
	strings.Repeat("é", 5_000), "CON", "-rf",
}

func TestFileNamesAreSafeAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, id := range hostile {
		name := File(id)
		if prev, dup := seen[name]; dup {
			t.Errorf("%q and %q share the file name %q", prev, id, name)
		}
		seen[name] = id
		if name == "" || name == "." || name == ".." || len(name) > 255 || strings.ContainsAny(name, "/\\\x00\n") ||
			!utf8.ValidString(name) {
			t.Errorf("File(%.40q) = %q: not one safe file name", id, name)
		}
		if File(id) != name {
			t.Errorf("File(%.40q) is not stable", id)
		}
	}
	if File("acme__humanize-1") != "acme__humanize-1" {
		t.Errorf("a plain id changed: %q", File("acme__humanize-1"))
	}
}

func TestWorkflowPartsArePrintableAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, id := range hostile {
		part, plain := WorkflowPart(id)
		if plain != (part == id) {
			t.Errorf("WorkflowPart(%.40q) = %q, plain %v", id, part, plain)
		}
		key := part
		if !plain {
			key = "digested:" + part // the caller keeps the two forms apart
		}
		if prev, dup := seen[key]; dup {
			t.Errorf("%q and %q share the workflow id part %q", prev, id, part)
		}
		seen[key] = id
		if len(part) > MaxWorkflowPart {
			t.Errorf("WorkflowPart(%.40q) has %d bytes", id, len(part))
		}
		for i := 0; i < len(part); i++ {
			if part[i] < 0x20 || part[i] > 0x7e {
				t.Errorf("WorkflowPart(%.40q) = %q holds byte %#x", id, part, part[i])
				break
			}
		}
	}
	for _, id := range []string{"acme__humanize-1", "a/b", "sp ace", "a~b"} {
		if part, plain := WorkflowPart(id); !plain || part != id {
			t.Errorf("printable id %q changed: %q", id, part)
		}
	}
}
