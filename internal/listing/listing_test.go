package listing

import "testing"

func TestSome(t *testing.T) {
	for _, tc := range []struct {
		names []string
		n     int
		want  string
	}{
		{nil, 3, ""},
		{[]string{"a", "b"}, 2, "a, b"},
		{[]string{"a", "b", "c", "d", "e"}, 2, "a, b (and 3 more)"},
	} {
		if got := Some(tc.names, tc.n); got != tc.want {
			t.Errorf("Some(%q, %d) = %q, want %q", tc.names, tc.n, got, tc.want)
		}
	}
}
