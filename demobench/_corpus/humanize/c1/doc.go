// Package humanize formats numbers, sizes and durations for people: "1.5 MB", "1,234,567", "3m20s", "2nd".
//
// Every function is pure and safe for concurrent use. Formatting follows English conventions; there is no
// locale support.
package humanize
