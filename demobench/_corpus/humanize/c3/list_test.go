package humanize

import "testing"

func TestOrdinal(t *testing.T) {
	cases := map[int64]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th",
		21: "21st", 102: "102nd", 111: "111th", -1: "-1st"}
	for in, want := range cases {
		if got := Ordinal(in); got != want {
			t.Errorf("Ordinal(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestList(t *testing.T) {
	cases := []struct {
		items  []string
		oxford bool
		want   string
	}{
		{nil, false, ""},
		{[]string{"a"}, false, "a"},
		{[]string{"a", "b"}, true, "a and b"},
		{[]string{"a", "b", "c"}, false, "a, b and c"},
		{[]string{"a", "b", "c"}, true, "a, b, and c"},
	}
	for _, c := range cases {
		if got := List(c.items, c.oxford); got != c.want {
			t.Errorf("List(%q, %v) = %q, want %q", c.items, c.oxford, got, c.want)
		}
	}
	if got := ListWith([]string{"tea", "coffee"}, "or", false); got != "tea or coffee" {
		t.Errorf("ListWith = %q", got)
	}
}
