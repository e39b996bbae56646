// Package runfolder declares the layout of a run folder (runs/NAME): the name of every file and folder the
// starter, the activities, results and runlog read or write there, each once. Callers build paths with its
// functions instead of joining literals, so a reader finds the whole layout here. It holds what the folder's files
// are made of too: the node memos' format (memo.go), the atomic writes they use, and the
// repair of a JSON-lines file a killed process left a torn line in (repair.go: results.Store locks the rows file and
// calls it).
//
// It is a leaf: it imports the standard library and internal/safename (how an instance id or node key becomes a file
// name) only.
package runfolder

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"ctxlab/internal/safename"
)

// Files of a run folder.
const (
	// RowsFile holds one JSON row per (instance, method, model): the sweep's results.
	RowsFile = "results.jsonl"
	// RetriedFile keeps the rows a re-run took out of RowsFile to run again, for the record.
	RetriedFile = "results.retried.jsonl"
	// SummaryFile is the Markdown summary written from RowsFile when a sweep finishes.
	SummaryFile = "summary.md"
	// AttemptsFile records every start and end of every node activity (runlog.Attempt lines).
	AttemptsFile = "attempts.jsonl"
	// CallsFile records every model call, paid or served from the response cache (runlog.Call lines).
	CallsFile = "calls.jsonl"
	// SpecFile records the compiled spec of the last run, for report and status.
	SpecFile = "spec.json"
	// ServerFile names the address of the Temporal server of the starter that owns the run.
	ServerFile = "server.json"
	// LogFile is the run's log.
	LogFile = "ctxlab.log"
	// TemporalDB and TemporalLog are the embedded Temporal server's database and log.
	TemporalDB  = "temporal.db"
	TemporalLog = "temporal.log"
	// StarterLock is held by the starter whose server runs the sweep; PrepareLock by a starter preparing the folder
	// and starting or attaching to its sweep.
	StarterLock = "starter.lock"
	PrepareLock = "prepare.lock"
	// ReportFile and ReportHTML are what starter report writes.
	ReportFile = "report.md"
	ReportHTML = "report.html"
)

// Folders of a run folder.
const (
	// NodesDir holds the memo of each node that succeeded, by instance and node key.
	NodesDir = "nodes"
	// GradesDir holds the grade memos, shared by the nodes that grade the same patch.
	GradesDir = "grades"
	// RankingsDir holds the BM25 rankings of snapshots' chunks against issues, shared by the retrieve steps that rank
	// the same snapshot the same way.
	RankingsDir = "rankings"
	// CASDir is the default content store (and the response cache's folder).
	CASDir = "cas"
	// DatasetDir holds a generated dataset (the demo's).
	DatasetDir = "dataset"
	// ReposDir holds the clones of the instances' repositories.
	ReposDir = "repos"
	// PredictionsDir holds frozen predictions (starter predict) and exported ones (starter predictions).
	PredictionsDir = "predictions"
	// PreviousDir holds the rows and summary of sweeps of other specs, by spec hash.
	PreviousDir = "previous"
	// FiguresDir holds starter report's figures.
	FiguresDir = "figures"
	// ShippedDir holds, on a worker's machine, the starter's folders the run reads (api.ShippedFolders), unpacked
	// from the store, each under its archive's digest.
	ShippedDir = "shipped"
)

// Files are the files of a run folder that starter run and its activities append to or replace; Dirs the folders
// they write into. A run folder where one of them is something else cannot be written.
var (
	Files = []string{RowsFile, SummaryFile, RetriedFile, AttemptsFile, CallsFile, SpecFile, ServerFile}
	Dirs  = []string{NodesDir, GradesDir, RankingsDir, CASDir, DatasetDir}
)

// Rows is the rows file of the run folder dir.
func Rows(dir string) string { return filepath.Join(dir, RowsFile) }

// Retried is the file of rows a re-run took out to run again.
func Retried(dir string) string { return filepath.Join(dir, RetriedFile) }

// Summary is the run's Markdown summary.
func Summary(dir string) string { return filepath.Join(dir, SummaryFile) }

// Attempts is the run's record of node attempts.
func Attempts(dir string) string { return filepath.Join(dir, AttemptsFile) }

// Calls is the run's ledger of model calls.
func Calls(dir string) string { return filepath.Join(dir, CallsFile) }

// Spec is the record of the run's compiled spec.
func Spec(dir string) string { return filepath.Join(dir, SpecFile) }

// Server is the file naming the run's Temporal server.
func Server(dir string) string { return filepath.Join(dir, ServerFile) }

// Log is the run's log file.
func Log(dir string) string { return filepath.Join(dir, LogFile) }

// TemporalDBPath and TemporalLogPath are the embedded server's database and log.
func TemporalDBPath(dir string) string  { return filepath.Join(dir, TemporalDB) }
func TemporalLogPath(dir string) string { return filepath.Join(dir, TemporalLog) }

// StarterLockPath and PrepareLockPath are the run's two locks (see StarterLock).
func StarterLockPath(dir string) string { return filepath.Join(dir, StarterLock) }
func PrepareLockPath(dir string) string { return filepath.Join(dir, PrepareLock) }

// NodeMemo is where the run folder keeps the output of a node that last succeeded on an instance.
func NodeMemo(dir, instance, node string) string {
	return filepath.Join(dir, filepath.FromSlash(NodeMemoKey(instance, node)))
}

// The keys of a run's objects (store/objects): relative slash paths, the same in the run folder of one machine and
// under the run's prefix of a shared store, so the run folder keeps the layout it had before there was a store.

// NodeMemoKey is the key of a node's memo on an instance (NodeMemo in a run folder).
func NodeMemoKey(instance, node string) string {
	return path.Join(NodesDir, safename.File(instance), safename.File(node)+".json")
}

// RunMarkerKey is the object a starter writes in a shared store for its run (its name and the store's), which its
// workers must find there: one that does not has another store than the starter's.
const RunMarkerKey = "run.json"

// Keys of the folders of keyed objects (store/objects.Keyed): grade memos, rankings, the response cache's answers
// and context windows, embeddings; and of their locks.
const (
	GradesKey        = GradesDir
	GradeLocksKey    = GradesDir + "/locks"
	RankingsKey      = RankingsDir
	RankingLocksKey  = RankingsDir + "/locks"
	ResponsesKey     = CASDir + "/responses"
	WindowsKey       = CASDir + "/windows"
	ResponseLocksKey = CASDir + "/locks"
	EmbeddingsKey    = CASDir + "/embeddings"
)

// Nodes is the folder of node memos.
func Nodes(dir string) string { return filepath.Join(dir, NodesDir) }

// Grades is the folder of grade memos.
func Grades(dir string) string { return filepath.Join(dir, GradesDir) }

// Rankings is the folder of stored rankings.
func Rankings(dir string) string { return filepath.Join(dir, RankingsDir) }

// CAS is the run's default content store folder.
func CAS(dir string) string { return filepath.Join(dir, CASDir) }

// Embeddings is the content store's folder of embedding indexes.
func Embeddings(dir string) string { return filepath.Join(dir, filepath.FromSlash(EmbeddingsKey)) }

// Dataset is the folder of a generated dataset.
func Dataset(dir string) string { return filepath.Join(dir, DatasetDir) }

// Repos is the folder of repository clones.
func Repos(dir string) string { return filepath.Join(dir, ReposDir) }

// Shipped is the folder of the starter's folders unpacked on this machine.
func Shipped(dir string) string { return filepath.Join(dir, ShippedDir) }

// Predictions is the folder of frozen and exported predictions.
func Predictions(dir string) string { return filepath.Join(dir, PredictionsDir) }

// Previous is the folder the rows of the sweep of the spec with this hash were put aside in.
func Previous(dir, specHash string) string { return filepath.Join(dir, PreviousDir, specHash[:12]) }

// Report, ReportHTMLPath and Figures are starter report's outputs in the folder out.
func Report(out string) string         { return filepath.Join(out, ReportFile) }
func ReportHTMLPath(out string) string { return filepath.Join(out, ReportHTML) }
func Figures(out string) string        { return filepath.Join(out, FiguresDir) }

// PutAside moves the rows file and summary of the sweep of the spec with hash specHash out of dir, to
// Previous(dir, specHash), and returns that folder ("" when neither file was there, or on an error).
func PutAside(dir, specHash string) (string, error) {
	dest, moved := Previous(dir, specHash), false
	for _, name := range []string{RowsFile, SummaryFile} {
		src := filepath.Join(dir, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return "", err
		}
		if err := os.Rename(src, filepath.Join(dest, name)); err != nil {
			return "", fmt.Errorf("putting aside the previous spec's %s: %w", name, err)
		}
		moved = true
	}
	if !moved {
		return "", nil
	}
	return dest, nil
}
