// Package grading grades a model's patch of a SWE-bench instance by running the instance's tests, stage by stage,
// as the SWE-bench harness does (run_evaluation.py, grading.py, reporting.py). Each stage has its place:
//
//   - prepare the worktree: grading/executor (worktree.go: a fresh folder per grade, the test files saved to be
//     reset; docker.go: a container of the instance's image; pyenv.go: the Python environment a row states);
//   - apply: grading/executor (apply.go: the model patch through package diff, its test files reset, then the test
//     patch);
//   - run: grading/executor (local.go, docker.go with the harness's eval script in evalscript.go) over
//     grading/testrun (the test commands, contained) and grading/sandbox (the namespaces they run in);
//   - parse: grading/testlog (each runner's output as per-test results);
//   - decide: grading/testlog (decide.go: the harnesses' rules on the listed tests) and decide.go here (the run's
//     status: SWE-bench 5.0's rejections, build failures, names that match nothing, and whose failure a build
//     failure is);
//   - report: row.go (the row's fields: how the patch applied, the verdict, the tests at fault), labels.go
//     (SWE-bench 5.0's failure labels) and report.go (the harness's log tree and run report of a grade run).
//
// grade.go runs the stages for one patch (Grade), again while a failing grade may be a flake. The package links
// nothing of package activities or Temporal. The grade step (activities/steps/grade.go) calls Grade for every
// grade node, a sweep's and `starter grade`'s (each prediction a grade plan, so that its row is built, memoized and
// resumed as a sweep's is); `starter grade` calls the rest of the tree itself: grading/batch (a batch of
// predictions: read, graded concurrently, their rows and the harness's report written), the executors' settings
// and checks, and grading/imagebuild (the instance images).
package grading
