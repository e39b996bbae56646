package jsonnet

import (
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/specs"
)

func TestQueueLimitsCompile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.jsonnet": spec(
		"ctxlab.experiment({",
		"  name: 'x',",
		"  dataset: ctxlab.datasets.demo,",
		"  models: [ctxlab.models.offline],",
		"  methods: [ctxlab.methods.no_source],",
		"  limits: { queues: { llm: { concurrency: 8, rate: 2.5 }, grade: { concurrency: 1 } } },",
		"})")})
	e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := specs.QueueLimits{LLM: specs.QueueLimit{Concurrency: 8, Rate: 2.5},
		Grade: specs.QueueLimit{Concurrency: 1}}
	if e.Limits.Queues != want || e.Limits.Concurrency != 4 || e.Limits.Retries != 3 {
		t.Errorf("limits %+v, want queues %+v with the default concurrency and retries", e.Limits, want)
	}
}

func TestQueueLimitsErrors(t *testing.T) {
	cases := []struct{ line, want string }{
		{"  limits: { queues: { gpu: { concurrency: 2 } } },", `spec.jsonnet:8:23: limits.queues.gpu: unknown field "gpu" (fields here: cpu, grade, llm)`},
		{"  limits: { queues: { llm: { concurency: 2 } } },", `limits.queues.llm.concurency: unknown field "concurency" (fields here: concurrency, rate)`},
		{"  limits: { queues: { llm: { rate: 'fast' } } },", `limits.queues.llm.rate: expected a number, got string "fast"`},
		{"  limits: { queues: { grade: { concurrency: -2 } } },", `limits.queues.grade.concurrency: concurrency -2 must not be negative`},
	}
	for _, c := range cases {
		dir := writeFiles(t, map[string]string{"spec.jsonnet": spec(
			"ctxlab.experiment({",
			"  name: 'x',",
			"  dataset: ctxlab.datasets.demo,",
			"  models: [ctxlab.models.offline],",
			"  methods: [ctxlab.methods.no_source],",
			c.line,
			"})")})
		_, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s\n got %v\nwant one line containing %s", c.line, err, c.want)
		}
	}
}
