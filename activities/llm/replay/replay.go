// Package replay is the replay provider's implementation (specs.Replay): a replay model answers with what a
// finished run's model was answered, read from that run's response cache, and calls no model. A request is looked up
// by the key the recorded call was stored under (respcache.For: the replayed provider, the model id, that
// provider's endpoint as the environment names it, the sampling parameters, the context window the run recorded,
// the messages and the sample), so an answer is served only to the very request it answered. A request the run never
// asked is a non-retryable bad_input naming it: a replay never turns into a model call.
package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/activities/respcache"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/objects"
)

func init() {
	llm.Register(specs.Replay, llm.Implementation{New: newClient, Check: check})
}

// client answers one replay model's requests from the recorded cache.
type client struct {
	// recorded is the model as the recorded run called it: the provider it replays.
	recorded specs.Model
	// endpoint is the recorded provider's base URL, part of every key.
	endpoint string
	dir      string
	cache    respcache.Cache
}

func newClient(m specs.Model, _ llm.Config) (llm.Client, error) {
	dir, base, err := recordedFolder()
	if err != nil {
		return nil, err
	}
	recorded := m
	recorded.Provider, recorded.Replays = m.Replays, ""
	return client{recorded: recorded, endpoint: llm.BaseURL(recorded), dir: filepath.Join(dir, base),
		cache: respcache.Open(objects.Dir{Root: dir}, base)}, nil
}

// recordedFolder is the response cache CTXLAB_REPLAY_DIR names: a run folder's (runs/NAME, whose content store
// folder holds it: base is that folder's name) or a shared one (the folder a run's --cache named: base is "").
func recordedFolder() (dir, base string, err *llm.Error) {
	v := specs.Replay.Env.Folder
	dir = strings.TrimSpace(os.Getenv(v))
	switch {
	case dir == "":
		return "", "", &llm.Error{Kind: errkind.BadInput, Msg: v + " is not set: name the folder of the finished " +
			"run whose answers a replay model serves (runs/NAME, or the --cache folder it used)"}
	case isDir(runfolder.CAS(dir)):
		return dir, runfolder.CASDir, nil
	case !isDir(dir):
		return "", "", &llm.Error{Kind: errkind.BadInput, Msg: fmt.Sprintf("%s names %s, which is not a folder", v, dir)}
	}
	return dir, "", nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Prepare looks req up; its one attempt serves the recorded answer, or fails for good.
func (c client) Prepare(_ context.Context, req llm.Request) (llm.Attempt, *llm.Error) {
	return llm.Attempt{Send: func(ctx context.Context) (llm.Response, *llm.Error, time.Duration) {
		resp, err := c.answer(ctx, req)
		return resp, err, 0
	}}, nil
}

// answer is the recorded answer to req: under the window the recorded run last recorded for the model (what its
// keys were computed with), scrubbed of the secrets this process holds, priced with the spec's table.
func (c client) answer(ctx context.Context, req llm.Request) (llm.Response, *llm.Error) {
	w, _ := c.cache.Window(ctx, c.endpoint, c.recorded.ID)
	req.Context, req.ContextSource = w.Tokens, w.Source
	key := respcache.For(c.recorded, c.endpoint, req).Key()
	e, ok := c.cache.Get(ctx, key)
	if !ok {
		return llm.Response{}, &llm.Error{Kind: errkind.BadInput, Msg: fmt.Sprintf("the recorded run in %s holds no "+
			"answer to this request (task %s, sample %d, %d messages of %d bytes, to %s model %s at %s; response "+
			"cache key %s): a replay serves only the requests the run asked, and asks no model", c.dir, req.Task,
			req.Sample, len(req.Messages), messageBytes(req), c.recorded.Provider, c.recorded.ID, c.endpoint, key)}
	}
	resp := e.Response.Scrubbed()
	if err := llm.CheckUsage(resp.Usage); err != nil {
		// A recorded file, not an endpoint: asking again reads the same.
		return llm.Response{}, &llm.Error{Kind: errkind.BadInput, Msg: fmt.Sprintf("the recorded run in %s "+
			"answered this request (response cache key %s) with usage that cannot be real: %v", c.dir, key, err)}
	}
	resp.CostUSD = llm.Cost(resp.Usage, c.recorded.Price)
	return resp, nil
}

func messageBytes(req llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n
}

// check finds the recorded folder before a sweep.
func check(_ context.Context, _ specs.Model, _ time.Duration) llm.ModelCheck {
	dir, base, err := recordedFolder()
	if err != nil {
		return llm.ModelCheck{Problem: err.Msg, Fix: "set " + specs.Replay.Env.Folder + " to the finished run's folder"}
	}
	return llm.ModelCheck{Served: true, Host: "the answers recorded in " + filepath.Join(dir, base)}
}
