package humanize

import "strings"

// List joins items the way a sentence would: "a", "a and b", "a, b and c". With oxford set, three or more items
// get a comma before the conjunction: "a, b, and c".
func List(items []string, oxford bool) string {
	return ListWith(items, "and", oxford)
}

// ListWith is List with another conjunction, such as "or".
func ListWith(items []string, conj string, oxford bool) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " " + conj + " " + items[1]
	}
	head := strings.Join(items[:len(items)-1], ", ")
	if oxford {
		head += ","
	}
	return head + " " + conj + " " + items[len(items)-1]
}
