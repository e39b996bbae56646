package specs

// Anthropic is Anthropic's Messages API, through Anthropic's Go SDK; its implementation is
// activities/llm/anthropic.go.
var Anthropic = DeclareProvider(Provider{Name: "anthropic",
	Summary: "Anthropic's Messages API, natively (prompt caching, `tool_use`)",
	Env: ProviderEnv{BaseURL: "ANTHROPIC_BASE_URL", DefaultBaseURL: "https://api.anthropic.com/",
		Example: "https://api.anthropic.com", Key: "ANTHROPIC_API_KEY"},
	NeedsID: true, Paid: true,
	Counting: Counting{Scheme: "anthropic", With: "Anthropic's `count_tokens`", Metered: true},
	Check:    "`GET /v1/models/{id}` with the key"})
