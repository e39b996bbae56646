package steps

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	"ctxlab/activities/respcache"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
	"ctxlab/testkit/fakeopenai"
)

// replayJob is a job of its own run folder, as a node of a run there would be.
func replayJob(t *testing.T, runDir string) *job {
	t.Helper()
	store, err := cas.NewDir(runfolder.CAS(runDir))
	if err != nil {
		t.Fatal(err)
	}
	return &job{env: Env{RunDir: runDir, Log: zerolog.Nop(), Models: Models{Budget: localBudget(limiter.Limits{})}}, store: store, usage: &runlog.Usage{},
		in: api.NodeInput{Run: "t", Node: "patch", Step: "m.patch"}}
}

// recordedCache is the response cache of the run in runDir.
func recordedCache(runDir string) respcache.Cache {
	return respcache.Open(objects.Dir{Root: runDir}, runfolder.CASDir)
}

// TestReplayServesTheRecordedAnswers: a replay model answers each request with what the recorded run's openai model
// was answered (through a server that reported its context window, so the keys hold it), with the same answer and
// row fields, after the server is gone; a request the run never asked fails its step as bad_input naming it, and no
// model is asked.
func TestReplayServesTheRecordedAnswers(t *testing.T) {
	srv := fakeopenai.New(fakeopenai.WithModels(8192, "gpt-4o-mini"), fakeopenai.WithServedModel("gpt-4o-mini-2024"))
	hs := httptest.NewServer(srv)
	t.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	temp, seed := 0.7, int64(3)
	mp := specs.ModelParams{Model: specs.Model{Name: "gpt", Provider: specs.OpenAI.Name, ID: "gpt-4o-mini",
		Temperature: &temp, Seed: &seed, Price: specs.Price{Input: 2, Output: 10}}}
	ask := func(text string, sample int) llm.Request {
		return llm.Request{Task: specs.Patch.Task, Sample: sample,
			Messages: []llm.Message{{Role: "system", Content: "You fix bugs."}, {Role: "user", Content: text}}}
	}
	asked := []llm.Request{ask("fix the parser", 0), ask("fix the parser", 1), ask("fix the writer", 0)}
	recorded := t.TempDir()
	type answer struct {
		resp llm.Response
		row  map[string]any
	}
	var want []answer
	for _, req := range asked {
		resp, row, err := replayJob(t, recorded).callModel(context.Background(), mp, req)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, answer{resp, row})
	}
	if w, ok := recordedCache(recorded).Window(context.Background(), hs.URL+"/v1", "gpt-4o-mini"); !ok || w.Tokens != 8192 {
		t.Fatalf("the recorded run recorded no window (%+v): the keys would not hold one", w)
	}
	calls := srv.Calls()
	hs.Close()

	t.Setenv(specs.Replay.Env.Folder, recorded)
	rp := mp
	rp.Model.Provider, rp.Model.Replays = specs.Replay.Name, specs.OpenAI.Name
	replaying := replayJob(t, t.TempDir())
	for i, req := range asked {
		resp, row, err := replaying.callModel(context.Background(), rp, req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !reflect.DeepEqual(resp, want[i].resp) || !reflect.DeepEqual(row, want[i].row) {
			t.Errorf("request %d: replayed %+v %v, recorded %+v %v", i, resp, row, want[i].resp, want[i].row)
		}
	}
	_, _, err := replaying.callModel(context.Background(), rp, ask("fix the parser", 2))
	var se *Error
	if !errors.As(err, &se) || se.Type != "bad_input" || se.Retryable ||
		!strings.Contains(se.Message, "holds no answer to this request (task patch, sample 2") {
		t.Fatalf("a request the run never asked: %v", err)
	}
	if srv.Calls() != calls {
		t.Fatalf("the replay asked the model %d times", srv.Calls()-calls)
	}

	// A recorded answer whose usage cannot be real (a shared folder's) is refused, not priced.
	sampled := sampleModel(mp.Model, 0, nil)
	windowed := asked[2]
	windowed.Context = 8192
	creq := respcache.For(sampled, hs.URL+"/v1", windowed)
	forged := want[2].resp
	forged.Usage.CachedTokens = -1000
	if err := recordedCache(recorded).Put(context.Background(), creq.Key(), creq, forged, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replayJob(t, t.TempDir()).callModel(context.Background(), rp, asked[2]); !errors.As(err, &se) ||
		se.Type != "bad_input" || !strings.Contains(se.Message, "usage that cannot be real") {
		t.Fatalf("a recorded answer of impossible usage: %v", err)
	}

	t.Setenv(specs.Replay.Env.Folder, "")
	if _, _, err := replaying.callModel(context.Background(), rp, asked[0]); err == nil ||
		!strings.Contains(err.Error(), specs.Replay.Env.Folder+" is not set") {
		t.Fatalf("no recorded folder: %v", err)
	}
}
