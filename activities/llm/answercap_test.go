package llm

import (
	"context"
	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestAnswerSizeIsCapped has an endpoint answer a well-formed completion of 50 MB (the answer that took a worker to
// 790 MB), streamed with and without a Content-Length: the call must fail as a bad response that names the cap,
// having read little more than the cap and allocated a few times it, not the 50 MB; an answer under the cap still
// comes through.
func TestAnswerSizeIsCapped(t *testing.T) {
	const huge = 50 << 20
	for _, withLength := range []bool{false, true} {
		t.Run(fmt.Sprintf("content-length=%v", withLength), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				head := `{"id":"x","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,` +
					`"finish_reason":"stop","message":{"role":"assistant","content":"`
				tail := `"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
				w.Header().Set("Content-Type", "application/json")
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(head)+huge+len(tail)))
				}
				_, _ = io.WriteString(w, head)
				chunk := strings.Repeat("a", 64<<10)
				for left := huge; left > 0; left -= len(chunk) {
					if _, err := io.WriteString(w, chunk[:min(len(chunk), left)]); err != nil {
						return // the client stopped reading
					}
				}
				_, _ = io.WriteString(w, tail)
			}))
			defer ts.Close()
			t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
			t.Setenv(specs.OpenAI.Env.Key, testKey)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := newProvider(t, WithAttempts(1)).Complete(context.Background(), localizeRequest())
			runtime.ReadMemStats(&after)
			e := wantKind(t, err, errkind.BadResponse, http.StatusOK)
			if !strings.Contains(e.Msg, "MiB") || !strings.Contains(e.Msg, "cap") {
				t.Errorf("the error does not say the answer was over ctxlab's cap: %v", err)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("error: %v; allocated %d MiB", err, allocated>>20)
			if allocated > 4*maxAnswerBytes {
				t.Errorf("the refused call allocated %d MiB; the cap is %d MiB", allocated>>20, maxAnswerBytes>>20)
			}
			ts.CloseClientConnections()
		})
	}
	t.Run("under the cap", func(t *testing.T) {
		text := strings.Repeat("b", 1<<20)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,`+
				`"finish_reason":"stop","message":{"role":"assistant","content":"%s"}}],"usage":{"prompt_tokens":10,`+
				`"completion_tokens":262144,"total_tokens":262154}}`, text)
		}))
		defer ts.Close()
		t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
		t.Setenv(specs.OpenAI.Env.Key, testKey)
		resp, err := newProvider(t, WithAttempts(1)).Complete(context.Background(), localizeRequest())
		if err != nil || resp.Text != text {
			t.Fatalf("a 1 MiB answer: %v (%d bytes)", err, len(resp.Text))
		}
	})
}
