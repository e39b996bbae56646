package specs

import "fmt"

// Replay serves the answers a finished run received, from its response cache, and calls no model; its
// implementation is activities/llm/replay.
var Replay = DeclareProvider(Provider{Name: "replay",
	Summary: "the answers a finished run's model received (`replays`: its provider), from that run's response " +
		"cache, keyed as the cache is; a request the run never asked fails its step, naming it",
	Env: ProviderEnv{Folder: "CTXLAB_REPLAY_DIR"}, NeedsID: true,
	Check:    "the folder `CTXLAB_REPLAY_DIR` names exists",
	Validate: replayedProvider})

// replayedProvider checks that a replay model names the paid provider whose recorded answers it serves.
func replayedProvider(m Model) (field, problem string) {
	if p, ok := Providers[m.Replays]; !ok || !p.Paid {
		return "replays", fmt.Sprintf("model %q: a replay model names the provider whose recorded answers it "+
			"serves (replays: %s), not %q", m.Name, list(paidProviders()), m.Replays)
	}
	return "", ""
}
