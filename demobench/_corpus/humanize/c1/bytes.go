package humanize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// SI (decimal) and IEC (binary) byte units.
const (
	Byte = 1

	KB = 1000 * Byte
	MB = 1000 * KB
	GB = 1000 * MB
	TB = 1000 * GB
	PB = 1000 * TB

	KiB = 1024 * Byte
	MiB = 1024 * KiB
	GiB = 1024 * MiB
	TiB = 1024 * GiB
	PiB = 1024 * TiB
)

var (
	siSuffixes  = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	iecSuffixes = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
)

// Bytes formats a size with decimal (SI) units: Bytes(82854982) == "83 MB".
func Bytes(n uint64) string { return formatSize(n, 1000, siSuffixes) }

// IBytes formats a size with binary (IEC) units: IBytes(82854982) == "79 MiB".
func IBytes(n uint64) string { return formatSize(n, 1024, iecSuffixes) }

func formatSize(n uint64, base float64, suffixes []string) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	e := math.Floor(math.Log(float64(n)) / math.Log(base))
	if int(e) >= len(suffixes) {
		e = float64(len(suffixes) - 1)
	}
	val := math.Floor(float64(n)/math.Pow(base, e)*10+0.5) / 10
	format := "%.0f %s"
	if val < 10 {
		format = "%.1f %s"
	}
	return fmt.Sprintf(format, val, suffixes[int(e)])
}

var unitMultipliers = map[string]uint64{
	"b": Byte, "": Byte,
	"k": KB, "kb": KB, "kib": KiB, "ki": KiB,
	"m": MB, "mb": MB, "mib": MiB, "mi": MiB,
	"g": GB, "gb": GB, "gib": GiB, "gi": GiB,
	"t": TB, "tb": TB, "tib": TiB, "ti": TiB,
	"p": PB, "pb": PB, "pib": PiB, "pi": PiB,
}

// ParseBytes reads a size such as "42 MB", "42mb", "1.5 GiB" or "1,024 kB" and returns the number of bytes.
func ParseBytes(s string) (uint64, error) {
	orig := s
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (unicode.IsDigit(rune(s[i])) || s[i] == '.' || s[i] == ',') {
		i++
	}
	num := strings.ReplaceAll(s[:i], ",", "")
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	if num == "" {
		return 0, fmt.Errorf("humanize: no number in size %q", orig)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("humanize: bad number in size %q: %w", orig, err)
	}
	mult, ok := unitMultipliers[unit]
	if !ok {
		return 0, fmt.Errorf("humanize: unknown unit %q in size %q", unit, orig)
	}
	v := f * float64(mult)
	if v >= math.MaxUint64 {
		return 0, fmt.Errorf("humanize: size %q is too large", orig)
	}
	return uint64(v), nil
}
