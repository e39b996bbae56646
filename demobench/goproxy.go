package demobench

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// GoproxyDir is the folder of a dataset that holds the third-party modules the demo repositories require, in the
// layout a file:// GOPROXY reads: <escaped module path>/@v/{list, <version>.info, .mod, .zip}. Grading points
// GOPROXY at it (grading.goproxy in specs/demo.jsonnet) so that the module graph downloads without a network.
const GoproxyDir = "goproxy"

// GoproxyURL returns the GOPROXY value for a dataset folder's module proxy.
func GoproxyURL(datasetDir string) string {
	return "file://" + filepath.ToSlash(filepath.Join(datasetDir, GoproxyDir))
}

// modules are the third-party modules the demo publishes. Changing anything here or in _corpus/modules changes
// Version.
var modules = []moduleSpec{
	{path: "example.org/textwrap", version: "v1.3.0", dir: "textwrap", when: utc(2023, 10, 2, 9, 0, 0)},
}

func moduleByPath(p string) (moduleSpec, bool) {
	for _, m := range modules {
		if m.path == p {
			return m, true
		}
	}
	return moduleSpec{}, false
}

// moduleFiles returns a module's files, its go.mod included, keyed by path inside the module.
func moduleFiles(m moduleSpec) (map[string][]byte, error) {
	files, err := readTree(path.Join("modules", m.dir))
	if err != nil {
		return nil, err
	}
	if _, ok := files["go.mod"]; ok {
		return nil, fmt.Errorf("demobench module %s: go.mod is written by the generator", m.path)
	}
	files["go.mod"] = moduleGoMod(m)
	return files, nil
}

func moduleGoMod(m moduleSpec) []byte {
	return []byte("module " + m.path + "\n\ngo 1.21\n")
}

// moduleZip is the module's zip as a proxy serves it: every file under "<path>@<version>/", in path order, with
// the module's date, so the bytes (and so the hash) are the same on every machine.
func moduleZip(m moduleSpec, files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.path + "@" + m.version + "/" + p, Method: zip.Deflate, Modified: m.when})
		if err != nil {
			return nil, fmt.Errorf("zip of %s: %w", m.path, err)
		}
		if _, err := w.Write(files[p]); err != nil {
			return nil, fmt.Errorf("zip of %s: %w", m.path, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip of %s: %w", m.path, err)
	}
	return buf.Bytes(), nil
}

// hash1 is the go command's "h1:" hash of a file tree (golang.org/x/mod/sumdb/dirhash.Hash1): the SHA-256 of the
// lines "<hex sha256 of the file>  <name>\n" in name order, base64-encoded.
func hash1(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	summary := sha256.New()
	for _, n := range names {
		fmt.Fprintf(summary, "%x  %s\n", sha256.Sum256(files[n]), n)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(summary.Sum(nil))
}

// goSumLines returns a module's two go.sum lines: the hash of its zip's files and of its go.mod.
func goSumLines(m moduleSpec) (string, error) {
	files, err := moduleFiles(m)
	if err != nil {
		return "", err
	}
	inZip := make(map[string][]byte, len(files))
	for p, d := range files {
		inZip[m.path+"@"+m.version+"/"+p] = d
	}
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", m.path, m.version, hash1(inZip),
		m.path, m.version, hash1(map[string][]byte{"go.mod": moduleGoMod(m)})), nil
}

// escapeModulePath writes each capital letter as '!' and its lower case, as the proxy layout does.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeGoproxy publishes every module into dir in the file:// GOPROXY layout.
func writeGoproxy(dir string) error {
	for _, m := range modules {
		files, err := moduleFiles(m)
		if err != nil {
			return err
		}
		zipData, err := moduleZip(m, files)
		if err != nil {
			return err
		}
		info, err := json.Marshal(struct {
			Version string
			Time    string
		}{m.version, m.when.Format("2006-01-02T15:04:05Z")})
		if err != nil {
			return fmt.Errorf("module %s: %w", m.path, err)
		}
		vdir := filepath.Join(dir, filepath.FromSlash(escapeModulePath(m.path)), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return fmt.Errorf("module %s: %w", m.path, err)
		}
		for name, data := range map[string][]byte{
			"list":              []byte(m.version + "\n"),
			m.version + ".info": append(info, '\n'),
			m.version + ".mod":  files["go.mod"],
			m.version + ".zip":  zipData,
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return fmt.Errorf("module %s: %w", m.path, err)
			}
		}
	}
	return nil
}
