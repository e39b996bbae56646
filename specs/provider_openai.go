package specs

// OpenAI is any OpenAI-compatible chat completions endpoint (OpenAI, gateways, vLLM, llama.cpp, Ollama, LiteLLM);
// its implementation is activities/llm/openai.go.
var OpenAI = DeclareProvider(Provider{Name: "openai",
	Summary: "an OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, gateways)",
	Env: ProviderEnv{BaseURL: "OPENAI_BASE_URL", DefaultBaseURL: "https://api.openai.com/v1/",
		Example: "http://localhost:8000/v1", Key: "OPENAI_API_KEY", KeylessLoopback: true},
	NeedsID: true, Paid: true,
	Counting: Counting{Scheme: TokenizerEndpoint, With: "the server's `POST /tokenize`: llama.cpp, vLLM"},
	Window: "llama.cpp's `/props` or `/slots`, else `/v1/models` (vLLM's `max_model_len`, OpenRouter's " +
		"`context_length`, llama.cpp's `meta.n_ctx`)",
	Check: "`GET /v1/models` lists the id; the window holds each issue beside `max_tokens`"})
