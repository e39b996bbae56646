package specs

import "fmt"

// Replay serves the answers a finished run received, from its response cache, and calls no model; its
// implementation is activities/llm/replay.
var Replay = DeclareProvider(Provider{Name: "replay",
	Summary: "the answers a finished run received, from its response cache (keyed as the cache is: the model it " +
		"replays, that provider's endpoint, the request); a request it holds no answer for fails the step, naming it",
	Env: ProviderEnv{Folder: "CTXLAB_REPLAY_DIR"}, NeedsID: true,
	Check:    "the folder holds a response cache",
	Validate: replayedProvider})

// replayedProvider checks that a replay model names the paid provider whose recorded answers it serves.
func replayedProvider(m Model) (field, problem string) {
	p, ok := Providers[m.Replays]
	if !ok || !p.Paid {
		var paid []string
		for _, n := range ProviderNames() {
			if Providers[n].Paid {
				paid = append(paid, n)
			}
		}
		return "replays", fmt.Sprintf("model %q: a replay model names the provider whose recorded answers it "+
			"serves (replays: %s), not %q", m.Name, list(paid), m.Replays)
	}
	return "", ""
}
