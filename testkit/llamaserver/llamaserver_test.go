package llamaserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// post sends a JSON body and returns the status and the answer.
func post(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestServerFacts checks the facts the end-to-end tests rely on against a real llama-server: it serves the model
// under ModelID, reports its context in /props, counts usage as /tokenize does, refuses a prompt longer than the
// context with 400, and answers embeddings only when started for them.
func TestServerFacts(t *testing.T) {
	t.Parallel()
	chat := Start(t, Options{Context: 512})
	emb := Start(t, Options{Context: 512, Embeddings: true})

	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := chat.getJSON("/v1/models", &models); err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 1 || models.Data[0].ID != ModelID {
		t.Errorf("/v1/models lists %+v, want the one id %s", models.Data, ModelID)
	}
	props, err := chat.Props()
	if err != nil {
		t.Fatal(err)
	}
	if props.Context != 512 || props.Slots < 1 {
		t.Errorf("/props: %+v, want context 512", props)
	}

	code, body := post(t, chat.URL+"/v1/chat/completions", map[string]any{"model": ModelID, "max_tokens": 16,
		"messages": []map[string]string{{"role": "user", "content": "Once upon a time"}}})
	if code != http.StatusOK {
		t.Fatalf("chat: %d %s", code, body)
	}
	var ans struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Choices) != 1 || ans.Usage.CompletionTokens < 1 || ans.Usage.CompletionTokens > 16 ||
		ans.Usage.PromptTokens < 4 {
		t.Errorf("chat answer %s", body)
	}

	long := strings.Repeat("the cat sat on the mat and ", 200)
	if n, err := chat.Tokenize(long); err != nil || n <= 512 {
		t.Fatalf("/tokenize counts %d tokens (%v), want more than the context", n, err)
	}
	code, body = post(t, chat.URL+"/v1/chat/completions", map[string]any{"model": ModelID,
		"messages": []map[string]string{{"role": "user", "content": long}}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "exceeds the available context size") {
		t.Errorf("a prompt over the context: %d %s, want 400 exceeds the available context size", code, body)
	}

	code, body = post(t, chat.URL+"/v1/embeddings", map[string]any{"model": ModelID, "input": []string{"a cat"}})
	if code == http.StatusOK {
		t.Errorf("the chat instance answered embeddings: %s", body)
	}
	code, body = post(t, emb.URL+"/v1/embeddings", map[string]any{"model": ModelID, "input": []string{"a cat", "a dog"}})
	var vecs struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &vecs); code != http.StatusOK || err != nil || len(vecs.Data) != 2 ||
		len(vecs.Data[0].Embedding) == 0 {
		t.Errorf("embeddings: %d %s", code, body)
	}
}

// TestModel checks where the model comes from: the repository's copy with no variable set, from any working folder
// (a clone with nothing above it finds it), the variable's file when set, and a file of other content refused.
func TestModel(t *testing.T) {
	t.Setenv(ModelEnv, "")
	t.Chdir(t.TempDir())
	b, err := Model()
	if err != nil || sha256Hex(b) != ModelSHA256 || len(b) != 1185376 {
		t.Fatalf("the repository's copy from a folder outside the checkout: %d bytes, %v", len(b), err)
	}
	other := filepath.Join(t.TempDir(), ModelFile)
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ModelEnv, other)
	if got, err := Model(); err != nil || !bytes.Equal(got, b) {
		t.Errorf("the variable's copy: %d bytes, %v", len(got), err)
	}
	if err := os.WriteFile(other, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Model(); err == nil || !strings.Contains(err.Error(), ModelSHA256) || !strings.Contains(err.Error(), other) {
		t.Errorf("a file of other content: %v", err)
	}
	t.Setenv(ModelEnv, filepath.Join(t.TempDir(), "missing.gguf"))
	if _, err := Model(); err == nil || !strings.Contains(err.Error(), ModelEnv) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestPlaceModelConcurrently: the tests of one package start their servers at once, each placing the model into the
// shared folder; every placement must succeed (CI once saw a rename fail when they shared a temporary name).
func TestPlaceModelConcurrently(t *testing.T) {
	root := t.TempDir()
	model := bytes.Repeat([]byte("gguf"), 1<<18)
	errs := make(chan error, 16)
	for range cap(errs) {
		go func() {
			_, err := placeModel(root, model)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(root, "models", "*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
