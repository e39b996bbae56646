// Package synthrepo generates a deterministic repository of SWE-bench's average size (3,010 files, 438K lines) for
// benchmarks: Python modules with classes and functions, Go files, and documentation and configuration files, over
// a vocabulary of camelCase and snake_case identifiers, so tokenizers, chunkers and retrievers see code-like text.
// It is not a benchmark of context selection (it has no bugs); package demobench is.
package synthrepo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// SWE-bench's average repository (PAPER.md).
const (
	Files = 3010
	Lines = 438000
)

// File is one generated file.
type File struct {
	Path    string
	Content []byte
}

var words = strings.Fields(`request response session header cookie token parse render encode decode value config
option parser handler client server router cache index query field model record table column schema migrate
validate error status timeout retry buffer stream reader writer format message event signal thread worker queue
task result future promise lock mutex channel socket address port host path url route template context manager
factory builder adapter wrapper plugin registry loader resolver compiler lexer node tree graph edge vertex matrix
vector tensor array slice map list dict tuple string bytes number integer float decimal date time zone locale`)

// Generate returns the repository for a seed: the same seed gives the same bytes on every machine.
func Generate(seed uint64) []File {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	// Line counts: a skewed distribution (many small files, a few large), then scaled to exactly Lines.
	counts := make([]int, Files)
	sum := 0
	for i := range counts {
		x := rng.ExpFloat64()
		counts[i] = 8 + int(x*x*60)
		sum += counts[i]
	}
	total := 0
	for i := range counts {
		counts[i] = max(1, counts[i]*Lines/sum)
		total += counts[i]
	}
	for i := 0; total != Lines; i = (i + 1) % Files {
		if total < Lines {
			counts[i]++
			total++
		} else if counts[i] > 1 {
			counts[i]--
			total--
		}
	}
	files := make([]File, Files)
	for i := range files {
		var path string
		var body string
		pkg := fmt.Sprintf("%s/%s", pick(rng), pick(rng))
		switch r := i % 20; {
		case r < 14:
			path = fmt.Sprintf("src/%s/%s_%s_%d.py", pkg, pick(rng), pick(rng), i)
			body = python(rng, counts[i])
		case r < 17:
			path = fmt.Sprintf("go/%s/%s%d.go", pkg, pick(rng), i)
			body = golang(rng, counts[i])
		case r < 19:
			path = fmt.Sprintf("docs/%s/%s_%d.md", pkg, pick(rng), i)
			body = prose(rng, counts[i])
		default:
			path = fmt.Sprintf("config/%s/%s_%d.yaml", pkg, pick(rng), i)
			body = yaml(rng, counts[i])
		}
		files[i] = File{Path: path, Content: []byte(body)}
	}
	return files
}

func pick(rng *rand.Rand) string { return words[rng.IntN(len(words))] }

func camel(rng *rand.Rand) string {
	a, b := pick(rng), pick(rng)
	return a + strings.ToUpper(b[:1]) + b[1:]
}

func snake(rng *rand.Rand) string { return pick(rng) + "_" + pick(rng) }

// emit writes exactly n lines from gen, which returns one line (without "\n") per call.
func emit(n int, gen func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(gen(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func python(rng *rand.Rand, n int) string {
	return emit(n, func(i int) string {
		switch {
		case i == 0:
			return "import " + pick(rng)
		case i%40 == 1:
			return "class " + strings.ToUpper(pick(rng)[:1]) + camel(rng)[1:] + ":"
		case i%8 == 2:
			return fmt.Sprintf("    def %s(self, %s, %s=None):", snake(rng), pick(rng), snake(rng))
		case i%8 == 3:
			return fmt.Sprintf(`        """Return the %s of the %s."""`, pick(rng), pick(rng))
		case i%8 == 7:
			return fmt.Sprintf("        return self.%s(%s)", snake(rng), pick(rng))
		}
		return fmt.Sprintf("        %s = %s.%s(%s, %q)", snake(rng), pick(rng), camel(rng), snake(rng), pick(rng))
	})
}

func golang(rng *rand.Rand, n int) string {
	return emit(n, func(i int) string {
		switch {
		case i == 0:
			return "package " + pick(rng)
		case i%10 == 1:
			return fmt.Sprintf("func %s(%s string) error {", strings.ToUpper(pick(rng)[:1])+camel(rng)[1:], pick(rng))
		case i%10 == 9:
			return "}"
		}
		return fmt.Sprintf("\t%s := %s.%s(%s, %d)", camel(rng), pick(rng), camel(rng), pick(rng), rng.IntN(100))
	})
}

func prose(rng *rand.Rand, n int) string {
	return emit(n, func(i int) string {
		if i%12 == 0 {
			return "## " + pick(rng) + " " + pick(rng)
		}
		return fmt.Sprintf("The %s %s uses `%s` to %s the %s.", pick(rng), pick(rng), snake(rng), pick(rng), pick(rng))
	})
}

func yaml(rng *rand.Rand, n int) string {
	return emit(n, func(i int) string { return fmt.Sprintf("%s_%d: %s", snake(rng), i, pick(rng)) })
}

// Write puts the files under dir.
func Write(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
