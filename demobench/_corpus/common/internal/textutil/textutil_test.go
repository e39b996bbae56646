package textutil

import (
	"reflect"
	"testing"
)

func TestTextutilWrap(t *testing.T) {
	got := Wrap("the quick brown fox jumps over the lazy dog", 10)
	want := []string{"the quick", "brown fox", "jumps over", "the lazy", "dog"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
	if got := Wrap("", 10); got != nil {
		t.Fatalf("Wrap(\"\") = %q", got)
	}
}

func TestTextutilPad(t *testing.T) {
	cases := []struct{ got, want string }{
		{PadRight("ab", 4), "ab  "},
		{PadLeft("ab", 4), "  ab"},
		{Center("ab", 5), " ab  "},
		{Ellipsis("abcdef", 4), "abc…"},
		{PadRight("abcdef", 2), "abcdef"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestTextutilCase(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPServerName": "http_server_name",
		"server name":    "server_name",
		"userID":         "user_id",
		"already_snake":  "already_snake",
	} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
	if got := KebabCase("MaxRetryCount"); got != "max-retry-count" {
		t.Errorf("KebabCase = %q", got)
	}
}
