package swebench

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A SWE-rebench row as the dataset writes it: install_config is an object with the test command, the parser and
// keys ctxlab does not need, and docker_image names the row's image.
const rebenchRowJSON = `{"instance_id":"oemof__tespy-653","repo":"oemof/tespy","base_commit":"abc","problem_statement":"p",` +
	`"patch":"d","test_patch":"t","FAIL_TO_PASS":["tests/test_x.py::test_a"],"PASS_TO_PASS":[],"version":"0.7",` +
	`"install_config":{"python":"3.9","install":"pip install -e .","test_cmd":"pytest --no-header -rA --tb=no -p no:cacheprovider",` +
	`"log_parser":"parse_log_pytest","pip_packages":["pytest"],"reqs_path":null,"eval_commands":["export X=1"]},` +
	`"docker_image":"swerebench/sweb.eval.x86_64.oemof_1776_tespy-653","image_name":"other/image:1"}`

func TestReadInstallConfig(t *testing.T) {
	rows, err := Read(strings.NewReader(rebenchRowJSON+"\n"), "rebench.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rows[0].InstallConfig
	if cfg == nil || !slices.Equal(cfg.TestCmd, TestCommands{"pytest --no-header -rA --tb=no -p no:cacheprovider"}) ||
		cfg.LogParser != "parse_log_pytest" || cfg.Install != "pip install -e ." ||
		!slices.Equal(cfg.EvalCommands, []string{"export X=1"}) {
		t.Fatalf("install_config = %+v", cfg)
	}
	// docker_image wins over image_name.
	if rows[0].Image != "swerebench/sweb.eval.x86_64.oemof_1776_tespy-653" {
		t.Errorf("image = %q", rows[0].Image)
	}
	// Written back, the row keeps both, and reads back the same.
	var buf bytes.Buffer
	if err := Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	again, err := Read(&buf, "again.jsonl")
	if err != nil || again[0].InstallConfig == nil || again[0].InstallConfig.LogParser != "parse_log_pytest" ||
		again[0].Image != rows[0].Image || !slices.Equal(again[0].InstallConfig.TestCmd, cfg.TestCmd) {
		t.Errorf("round trip: %v %+v\n%s", err, again, buf.String())
	}
}

func TestReadInstallConfigForms(t *testing.T) {
	row := func(extra string) string {
		return strings.Replace(good, `"PASS_TO_PASS":["TestB"]`, `"PASS_TO_PASS":["TestB"]`+extra, 1)
	}
	for _, tc := range []struct {
		name, extra string
		wantCmd     TestCommands
		wantParser  string
		wantImage   string
		wantNil     bool
	}{
		{name: "absent", wantNil: true},
		{name: "null", extra: `,"install_config":null`, wantNil: true},
		{name: "JSON in a string", extra: `,"install_config":"{\"test_cmd\":\"pytest -rA\",\"log_parser\":\"parse_log_pytest_v2\"}"`,
			wantCmd: TestCommands{"pytest -rA"}, wantParser: "parse_log_pytest_v2"},
		{name: "command list", extra: `,"install_config":{"test_cmd":["make build","pytest -rA"],"log_parser":"parse_log_pytest"}`,
			wantCmd: TestCommands{"make build", "pytest -rA"}, wantParser: "parse_log_pytest"},
		{name: "nothing graded", extra: `,"install_config":{"python":"3.9"}`, wantNil: true},
		{name: "image_name alone", extra: `,"image_name":"acme/img:2"`, wantNil: true, wantImage: "acme/img:2"},
		{name: "empty docker_image", extra: `,"docker_image":"","image_name":"acme/img:3"`, wantNil: true, wantImage: "acme/img:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := Read(strings.NewReader(row(tc.extra)), "x.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			cfg := rows[0].InstallConfig
			if (cfg == nil) != tc.wantNil {
				t.Fatalf("install_config = %+v", cfg)
			}
			if cfg != nil && (!slices.Equal(cfg.TestCmd, tc.wantCmd) || cfg.LogParser != tc.wantParser) {
				t.Errorf("install_config = %+v", cfg)
			}
			if rows[0].Image != tc.wantImage {
				t.Errorf("image = %q, want %q", rows[0].Image, tc.wantImage)
			}
		})
	}
	// A malformed install_config is an error naming the field.
	for _, bad := range []string{`,"install_config":3`, `,"install_config":{"test_cmd":7}`, `,"docker_image":["a"]`} {
		_, err := Read(strings.NewReader(row(bad)), "x.jsonl")
		field := "install_config"
		if strings.Contains(bad, "docker_image") {
			field = "docker_image"
		}
		if err == nil || !strings.Contains(err.Error(), "x.jsonl:1 (instance o__r-1): field "+field) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// In Hugging Face's parquet files install_config is a struct column.
type rebenchConfigColumn struct {
	TestCmd   string `parquet:"test_cmd,optional"`
	LogParser string `parquet:"log_parser,optional"`
	Python    string `parquet:"python,optional"`
}

type rebenchParquetRow struct {
	InstanceID       string              `parquet:"instance_id"`
	Repo             string              `parquet:"repo"`
	BaseCommit       string              `parquet:"base_commit"`
	ProblemStatement string              `parquet:"problem_statement"`
	Patch            string              `parquet:"patch"`
	TestPatch        string              `parquet:"test_patch"`
	FailToPass       []string            `parquet:"FAIL_TO_PASS,list"`
	InstallConfig    rebenchConfigColumn `parquet:"install_config"`
	DockerImage      string              `parquet:"docker_image,optional"`
}

func TestReadInstallConfigParquet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data", "test-00000-of-00001.parquet")
	writeParquet(t, file, []rebenchParquetRow{{InstanceID: "a__b-1", Repo: "a/b", BaseCommit: "c", ProblemStatement: "p",
		Patch: "d", TestPatch: "t", FailToPass: []string{"t1"},
		InstallConfig: rebenchConfigColumn{TestCmd: "pytest -rA", LogParser: "parse_log_pytest", Python: "3.11"},
		DockerImage:   "swerebench/sweb.eval.x86_64.a_1776_b-1"}})
	rows, err := ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rows[0].InstallConfig
	if cfg == nil || !slices.Equal(cfg.TestCmd, TestCommands{"pytest -rA"}) || cfg.LogParser != "parse_log_pytest" ||
		rows[0].Image != "swerebench/sweb.eval.x86_64.a_1776_b-1" {
		t.Errorf("row = %+v, install_config %+v", rows[0], cfg)
	}
}
