package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestReplayEndToEnd records the demo's reference methods and CQ2-CARE against the fake OpenAI server, then replays
// that run (provider replay, CTXLAB_REPLAY_DIR naming its folder) with the server still up: every row is the
// recorded run's, field for field, and the server was not asked once. Replayed under another tokenizer, whose
// budgets make prompts the run never asked, the rows that need them are bad_input rows naming the request, the run
// exits 4, and the server is still not asked.
func TestReplayEndToEnd(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	spec := demoVariant(t, "{ dataset+: { limit: 2 }, methods: super.methods[0:3] }")
	recorded := t.TempDir()
	if stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", recorded, "--ext-str",
		"model=openai"); code != exitOK {
		t.Fatalf("recording: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := readRows(t, filepath.Join(recorded, "demo", "results.jsonl"))
	asked := srv.Calls()
	if asked == 0 || len(want) == 0 {
		t.Fatalf("the recorded run asked %d calls for %d rows", asked, len(want))
	}

	setStarterEnv(t, specs.Replay.Env.Folder+"="+filepath.Join(recorded, "demo"))
	replayed := t.TempDir()
	replay := []string{"run", spec, "--ext-str", "model=openai", "--ext-str", "replay=true"}
	if stdout, stderr, code := runStarter(t, 10*time.Minute, append(replay, "--runs", replayed)...); code != exitOK {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := readRows(t, filepath.Join(replayed, "demo", "results.jsonl")); !reflect.DeepEqual(got, want) {
		t.Errorf("the replay's rows differ from the recorded run's:\nreplay %v\nrecorded %v", got, want)
	}
	if srv.Calls() != asked {
		t.Fatalf("the replay asked the server %d times", srv.Calls()-asked)
	}

	_, stderr, code := runStarter(t, 10*time.Minute, append(replay, "--runs", t.TempDir(), "--ext-str",
		"tokenizer=cl100k_base")...)
	if code != exitRowErrors || !strings.Contains(stderr, "bad_input") {
		t.Fatalf("a replay asking what the run never asked: exit %d, want %d naming bad_input\nstderr:\n%s", code,
			exitRowErrors, stderr)
	}
	if srv.Calls() != asked {
		t.Fatalf("a replay asking what the run never asked asked the server %d times", srv.Calls()-asked)
	}
}
