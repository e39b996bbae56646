package specs

// ListwiseRerankParams are the listwise_rerank step's parameters: SweRank's pipeline in one step. A retrieval stage
// ranks the repository's chunks against the issue (retrieve's params of the same names; unit window cuts retrieve's
// default window), the model reranks the first TopK of them window by window from the bottom up (Window candidates
// a call, each window Step above the last), and the reranked list, followed by the rest in retrieval order, is shown
// up to the budget as retrieve shows its list. Model is the model under test unless the step names another (an
// endpoint serving a reranker); Model and Tokenizer are filled in by the plan.
type ListwiseRerankParams struct {
	ModelParams
	Scorer         Scorer       `json:"scorer,omitempty"`
	Unit           RetrieveUnit `json:"unit"`
	K1             float64      `json:"k1,omitempty" range:"[0,)"`
	B              *float64     `json:"b,omitempty" range:"[0,1]"`
	EmbeddingModel string       `json:"embedding_model,omitempty"`
	// EmbeddingMaxTokens is retrieve's: the cut of each embedded text, for an embeddings server of shorter inputs.
	EmbeddingMaxTokens int   `json:"embedding_max_tokens,omitempty" range:"[0,)"`
	Partial            *bool `json:"partial,omitempty"`
	MaxTokens          int   `json:"max_tokens,omitempty" range:"[0,)"`
	FitParams
	// TopK is how many retrieved candidates the model reranks.
	TopK int `json:"top_k" range:"[1,)"`
	// Window is how many candidates one call ranks; Step how far each window is above the last (at most Window, so
	// that windows overlap or touch: the step refuses a larger one).
	Window int `json:"window" range:"[2,)"`
	Step   int `json:"step" range:"[1,)"`
	// MaxLines bounds the lines of each candidate a prompt shows (0: all of them), for models of a short context.
	MaxLines int `json:"max_lines,omitempty" range:"[0,)"`
}

// ListwiseRerankDefaults are SweRank's settings: the top 100 candidates, windows of 10 moved up by 5.
var ListwiseRerankDefaults = ListwiseRerankParams{Unit: UnitFunction, TopK: 100, Window: 10, Step: 5}

// The listwise_rerank step's row fields: the candidates reranked, and its windows (model calls), those whose answer
// named no candidate (their window kept its order) and those whose answer left some out (appended in order).
var (
	ListwiseCandidates = IntField("listwise_candidates").InContext()
	ListwiseWindows    = IntField("listwise_windows").InContext()
	ListwiseUnparsed   = IntField("listwise_unparsed").InContext()
	ListwiseIncomplete = IntField("listwise_incomplete").InContext()
)

var ListwiseRerank = Declare(Kind[ListwiseRerankParams]{Name: "listwise_rerank", Queue: QueueLLM,
	Inputs: []string{"checkout"}, Optional: []string{"budget"}, UsesModel: true, UsesTokenizer: true,
	ReplacesContext: true, Defaults: ListwiseRerankDefaults, Task: "listwise_rerank",
	Fields: Fields(UsageFields, ServedFields, ContextStepFields, FitFields, Rows(TemplateShown, ChunksShown,
		EmbeddingTokens, EmbeddingsCached, ListwiseCandidates, ListwiseWindows, ListwiseUnparsed, ListwiseIncomplete)),
	Summary: "retrieve chunks, rerank the top_k by the model in sliding windows (SweRank), show them up to the budget"})
