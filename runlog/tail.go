package runlog

import "ctxlab/internal/jsonl"

// Tail reads a JSON-lines file as it grows: each Next returns the whole lines appended since the previous call, so
// a progress display does not re-read a long file every second. A line still being written is left for the next
// call; a file that shrank (replaced or put aside) is read again from the start.
type Tail[T any] = jsonl.Tail[T]
