// Package units is the home of small parsers and formatters for quantities people type: byte sizes (package
// size) and durations with days and weeks (package duration). Each package has Parse and Format.
package units
