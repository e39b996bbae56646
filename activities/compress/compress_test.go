package compress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"ctxlab/specs"
)

func text() string {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "    result_%d = parse_header(raw, limit=%d)  # keep going\n", i, i)
	}
	return b.String()
}

func TestProtocolAgainstFake(t *testing.T) {
	srv := httptest.NewServer(FakeHandler())
	defer srv.Close()
	c := NewClient(srv.URL + "/")
	for _, rate := range []float64{1, 0.5, 0.2} {
		resp, err := c.Compress(context.Background(), Request{Compressor: string(specs.CompressorLLMLingua2), Text: text(), Rate: rate,
			Query: "parse_header fails"})
		if err != nil {
			t.Fatal(err)
		}
		got := float64(resp.CompressedTokens) / float64(resp.OriginalTokens)
		if math.Abs(got-rate) > 0.005 || len(strings.Fields(resp.Text)) != resp.CompressedTokens {
			t.Errorf("rate %.2f: kept %d of %d words (%d in text)", rate, resp.CompressedTokens, resp.OriginalTokens,
				len(strings.Fields(resp.Text)))
		}
		if rate < 1 && !strings.Contains(resp.Text, "parse_header") {
			t.Errorf("rate %.2f dropped the query's word", rate)
		}
	}
	_, err := c.Compress(context.Background(), Request{Compressor: string(specs.CompressorFake), Text: "x", Rate: 0})
	if err == nil {
		t.Error("rate 0 accepted")
	}
}

func TestErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"CUDA out of memory"}`)
	}))
	defer srv.Close()
	c := NewClient(srv.URL)
	_, err := c.Compress(context.Background(), Request{Compressor: string(specs.CompressorLongCodeZip), Text: "x", Rate: 0.5})
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 || !e.Retryable || !strings.Contains(e.Error(), "CUDA out of memory") ||
		calls.Load() != 1 {
		t.Errorf("err = %v after %d calls (the client leaves retries to Temporal)", err, calls.Load())
	}
	bad := httptest.NewServer(FakeHandler())
	defer bad.Close()
	resp, err := http.Post(bad.URL+"/compress", "application/json", strings.NewReader(`{"compressor":"x","rate":7}`))
	if err != nil || resp.StatusCode != 400 {
		t.Errorf("bad request: %v %v", resp, err)
	}
	down := NewClient("http://127.0.0.1:1")
	if _, err := down.Compress(context.Background(), Request{Compressor: string(specs.CompressorFake), Text: "x", Rate: 1}); !errors.As(err, &e) || !e.Retryable {
		t.Errorf("unreachable server: %v", err)
	}
}
