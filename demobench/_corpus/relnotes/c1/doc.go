// Package relnotes turns the "Unreleased" section of a CHANGELOG.md into release notes: it reads the entries
// (Parse) and renders them grouped by kind, wrapped to a width (Render).
package relnotes
