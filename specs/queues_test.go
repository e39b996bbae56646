package specs

import (
	"strings"
	"testing"
)

func TestQueueLimitsFor(t *testing.T) {
	q := QueueLimits{LLM: QueueLimit{Concurrency: 8, Rate: 2.5}, Grade: QueueLimit{Concurrency: 1}}
	if got := q.For(QueueLLM); got != (QueueLimit{Concurrency: 8, Rate: 2.5}) {
		t.Errorf("llm: %+v", got)
	}
	if got := q.For(QueueGrade); got.Concurrency != 1 || got.Rate != 0 {
		t.Errorf("grade: %+v", got)
	}
	if got := q.For(QueueCPU); got != (QueueLimit{}) {
		t.Errorf("cpu: %+v", got)
	}
	if got := q.For("gpu"); got != (QueueLimit{}) {
		t.Errorf("unknown kind: %+v", got)
	}
}

func TestValidateQueueLimits(t *testing.T) {
	e := goodExperiment()
	e.Limits.Queues = QueueLimits{LLM: QueueLimit{Concurrency: 4, Rate: 0.5}, Grade: QueueLimit{Concurrency: 2}}
	if errs := Validate(e); len(errs) != 0 {
		t.Fatalf("valid queue limits rejected: %v", errs)
	}
	e.Limits.Queues = QueueLimits{CPU: QueueLimit{Concurrency: -1}, Grade: QueueLimit{Rate: -3}}
	errs := Validate(e)
	if len(errs) != 2 {
		t.Fatalf("want 2 errors, got %v", errs)
	}
	if errs[0].Path != "limits.queues.cpu.concurrency" || !strings.Contains(errs[0].Msg, "concurrency -1") {
		t.Errorf("first error %+v", *errs[0])
	}
	if errs[1].Path != "limits.queues.grade.rate" || !strings.Contains(errs[1].Msg, "rate -3") {
		t.Errorf("second error %+v", *errs[1])
	}
}

func TestRunsLocally(t *testing.T) {
	offline := map[string]any{"name": "offline", "provider": "offline"}
	openai := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt-x"}
	for _, tc := range []struct {
		node Node
		want bool
	}{
		{Node{Activity: "measure"}, true},
		{Node{Activity: "assemble"}, true},
		{Node{Activity: "checkout"}, false},
		{Node{Activity: "grade"}, false},
		{Node{Activity: "retrieve"}, false},
		{Node{Activity: "patch", Params: map[string]any{"model": offline}}, true},
		{Node{Activity: "patch", Params: map[string]any{"model": openai}}, false},
		{Node{Activity: "localize", Params: map[string]any{"model": offline}}, true},
		{Node{Activity: "evidence", Params: map[string]any{"model": openai}}, false},
		{Node{Activity: "patch"}, false},
		{Node{Activity: "compress", Params: map[string]any{"compressor": "fake"}}, true},
		{Node{Activity: "compress", Params: map[string]any{"compressor": "llmlingua2"}}, false},
		{Node{Activity: "no_such_step"}, false},
	} {
		if got := RunsLocally(tc.node); got != tc.want {
			t.Errorf("RunsLocally(%s %v) = %v, want %v", tc.node.Activity, tc.node.Params, got, tc.want)
		}
	}
}

// TestQueueDeclarations: every declared queue kind has its limits field, and a kind nothing declares is an error,
// never another kind's queue.
func TestQueueDeclarations(t *testing.T) {
	for _, q := range Queues {
		if _, err := ForQueue[QueueLimit](QueueLimits{}, q.Name); err != nil {
			t.Error(err)
		}
		if q.Slots(4) < 1 {
			t.Errorf("%s: %d slots on 4 cores", q.Name, q.Slots(4))
		}
	}
	if _, err := QueueOf("gpu"); err == nil || !strings.Contains(err.Error(), `"gpu" is none of [llm cpu grade]`) {
		t.Errorf("QueueOf(gpu): %v", err)
	}
	if _, err := ForQueue[QueueLimit](QueueLimits{}, "gpu"); err == nil {
		t.Error("ForQueue(gpu) gave a field")
	}
	if _, err := ForQueue[string](QueueLimits{}, QueueCPU); err == nil {
		t.Error("ForQueue of the wrong field type gave a value")
	}
	type partial struct {
		LLM string `json:"llm"`
	}
	if _, err := ForQueue[string](partial{}, QueueGrade); err == nil {
		t.Error("ForQueue of a struct without the kind's field gave a value")
	}
}
