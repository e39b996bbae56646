package testlog

import "testing"

// Examples and fuzz targets are names of tests go test runs, as tests are; the shape rule is cmd/go's isTest.
func TestGoTestNamesOfEveryKind(t *testing.T) {
	for _, c := range []struct {
		name string
		kind string
	}{
		{"TestX", "Test"}, {"Test", "Test"}, {"Test_x", "Test"}, {"Testing", ""}, {"TestMain", "Test"},
		{"ExampleDecode", "Example"}, {"Example", "Example"}, {"ExampleReader_Read", "Example"},
		{"Example_second", "Example"}, {"Examplefoo", ""}, {"FuzzParse", "Fuzz"}, {"Fuzz", "Fuzz"}, {"Fuzzy", ""},
		{"BenchmarkX", ""}, {"ÜberTest", ""},
	} {
		if got := GoTestKind(c.name); got != c.kind {
			t.Errorf("GoTestKind(%q) = %q, want %q", c.name, got, c.kind)
		}
		want := c.kind != "" && c.name != "TestMain"
		if got := IsGoTestFunc(c.name); got != want {
			t.Errorf("IsGoTestFunc(%q) = %v, want %v", c.name, got, want)
		}
	}
	for _, c := range []struct{ in, pkg, test string }{
		{"encoding/csv::ExampleReader", "encoding/csv", "ExampleReader"},
		{"./png::FuzzDecode/seed#0", "./png", "FuzzDecode/seed#0"},
		{"pkg::FuzzDecode/582528ddfad69eb5", "pkg", "FuzzDecode/582528ddfad69eb5"},
		{"pkg::Examplefoo", "", "pkg::Examplefoo"},
	} {
		if pkg, test := SplitGoTestName(c.in); pkg != c.pkg || test != c.test {
			t.Errorf("SplitGoTestName(%q) = %q, %q; want %q, %q", c.in, pkg, test, c.pkg, c.test)
		}
	}
}
