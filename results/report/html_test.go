package report

import (
	"regexp"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
)

// hostile are strings a patch, a test log, an instance id or a method name may hold; none may become markup.
const (
	hostilePatch = "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+</pre><script>alert('patch')</script><pre>\n"
	hostileLog   = "FAIL </pre><img src=x onerror=alert('log')><a href=\"javascript:alert(1)\">x</a>"
	hostileID    = `i9"><script>alert('id')</script>`
	hostileName  = `<b onmouseover=alert(1)>evil</b>`
)

func TestHTMLEscapesRowsAndListsEverything(t *testing.T) {
	rows := outcomes(map[string][]bool{"anchor": {true, false, true}, "other": {false, false, true}}, nil)
	rows = append(rows,
		results.Row{results.FieldInstance: hostileID, results.FieldMethod: "anchor", results.FieldModel: "m",
			specs.Resolved.Name: true, specs.Rho.Name: 1.0, specs.ContextTokens.Name: 120.0},
		results.Row{results.FieldInstance: hostileID, results.FieldMethod: hostileName, results.FieldModel: "m",
			specs.Resolved.Name: false, results.FieldError: "<script>alert('err')</script>"})
	r, err := Build(rows, nil, Options{Title: "T </title><script>alert(1)</script>", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	key := results.Key{Instance: hostileID, Method: "anchor", Model: "m"}
	page, err := r.HTML(HTMLOptions{Details: map[results.Key]Detail{key: {
		ContextRef: "sha256:aa", ContextFiles: []string{"<x>.go"}, PatchRef: "sha256:bb", Patch: hostilePatch,
		TestLogRef: "sha256:cc", TestLog: hostileLog}},
		Figures: []Figure{{Name: "fig", Caption: "a <caption>", SVG: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)}},
		Link:    func(ref string) string { return "cas/" + strings.TrimPrefix(ref, "sha256:") },
		Run:     "demo"})
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	// The page's own markup has no script, no event handler, no external resource.
	for _, bad := range []string{"<script", "<img src=x", "<b ", `src="http`, `href="javascript`, "<link", "<iframe"} {
		if strings.Contains(strings.ToLower(html), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if tag := regexp.MustCompile(`<[a-zA-Z]+[^>]*\son[a-z]+=`).FindString(html); tag != "" {
		t.Errorf("a tag carries an event handler: %q", tag)
	}
	// The hostile text is there, escaped.
	for _, want := range []string{"&lt;/pre&gt;&lt;script&gt;alert(&#39;patch&#39;)&lt;/script&gt;",
		"&lt;img src=x onerror=alert(&#39;log&#39;)&gt;", "&lt;b onmouseover=alert(1)&gt;evil&lt;/b&gt;",
		"i9&#34;&gt;&lt;script&gt;", "&lt;x&gt;.go", `<a href="cas/bb">`, "starter audit demo --show REF",
		`<img src="data:image/svg&#43;xml;base64,`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Every method is in the per-method table and every instance has its drill-down.
	for _, m := range []string{"anchor", "other"} {
		if !regexp.MustCompile(`<td class="t">` + m + `</td>`).MatchString(html) {
			t.Errorf("method %s not listed", m)
		}
	}
	for _, inst := range []string{"i0", "i1", "i2"} {
		if !strings.Contains(html, "<summary>"+inst+" — resolved by") {
			t.Errorf("instance %s has no drill-down", inst)
		}
	}
	if n := strings.Count(html, `<details class="inst"`); n != 4 {
		t.Errorf("%d instance sections, want 4", n)
	}
}
