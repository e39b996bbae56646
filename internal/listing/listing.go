// Package listing writes lists of names for messages that must stay one line however many names there are.
package listing

import (
	"fmt"
	"strings"
)

// Some joins the first n names and counts the others: "a, b (and 3 more)".
func Some(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(names[:n], ", "), len(names)-n)
}
