// Package docs holds ctxlab's documentation pages (the Markdown files beside this one, which README.md links to).
// It has no code: its test keeps the pages true to the code, checking their links, the starter commands and flags
// they name, and their Jsonnet examples.
package docs
