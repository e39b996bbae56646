package checks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"ctxlab/activities/compress"
	"ctxlab/activities/dense"
	"ctxlab/activities/llm"
	"ctxlab/activities/steps"
	"ctxlab/specs"
)

// errorMessage is an error's text without the "model call failed" frame of *llm.Error.
func errorMessage(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		if le.Status != 0 {
			return fmt.Sprintf("HTTP %d: %s", le.Status, le.Msg)
		}
		return le.Msg
	}
	return err.Error()
}

// checkServices checks the services methods call besides the model: an embeddings endpoint for dense retrieval (one
// embedding of two words per embedding model), a compression server per compressor (one compression of a line).
func (r session) checkServices(ctx context.Context, needs planNeeds) {
	for _, model := range slices.Sorted(maps.Keys(needs.embeddings)) {
		methods := needs.embeddings[model]
		c, err := dense.NewFromEnv(model, &memVectors{})
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, r.ProbeTimeout)
			_, _, err = c.Embed(ctx, []string{"ctxlab check"})
			cancel()
		}
		if err != nil {
			for _, m := range methods {
				r.Fail("method", m, fmt.Sprintf("no embeddings of model %q from the endpoint (%s): %s", model,
					specs.OpenAI.Env.BaseURL, errorMessage(err)), "serve embeddings there (llama-server --embeddings, "+
					"vLLM --task embed), or leave the dense methods out")
			}
			continue
		}
		r.Checked = append(r.Checked, "embeddings of "+model)
	}
	compressors := slices.SortedFunc(maps.Keys(needs.compressors), func(a, b [2]string) int {
		return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
	})
	for _, k := range compressors {
		methods := needs.compressors[k]
		endpoint := k[1]
		if endpoint == "" {
			endpoint = r.Getenv(steps.CompressEndpointEnv)
		}
		var err error
		if endpoint == "" {
			err = fmt.Errorf("compressor %s needs a compression server, and neither %s nor the step's endpoint names "+
				"one", k[0], steps.CompressEndpointEnv)
		} else {
			cctx, cancel := context.WithTimeout(ctx, r.ProbeTimeout)
			client := compress.NewClient(endpoint)
			if r.HTTP != nil {
				client.HTTP = r.HTTP
			}
			_, err = client.Compress(cctx, compress.Request{Compressor: k[0],
				Text: "ctxlab checks that the compression server answers.", Rate: 0.5})
			cancel()
		}
		if err != nil {
			for _, m := range methods {
				r.Fail("method", m, err.Error(), "start scripts/compress_server.py and set "+
					steps.CompressEndpointEnv+", or leave the compressor's methods out")
			}
			continue
		}
		r.Checked = append(r.Checked, "compressor "+k[0])
	}
}

// memVectors is a dense.Cache that keeps nothing: a check's one embedding is not worth storing.
type memVectors struct{}

func (*memVectors) Get(string) ([]float32, bool) { return nil, false }
func (*memVectors) Put(string, []float32) error  { return nil }
