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
