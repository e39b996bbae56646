package specs

// Offline is the deterministic stand-in that needs no network and is not a language model; its implementation is
// activities/llm/offline.
var Offline = DeclareProvider(Provider{Name: "offline",
	Summary: "a deterministic stand-in, not a language model: answers from the step's own data (the gold patch, " +
		"the issue's words)",
	StandIn: true})
