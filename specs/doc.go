// Package specs holds a compiled experiment: the dataset, models, tokenizer, methods (each a DAG of steps), grading
// and limits that a researcher declares in Jsonnet, plus the catalog of activity names a step may use and the plan
// that merges every method's steps into one DAG per issue. It has no dependency on Temporal.
//
// The folder also holds the experiment files researchers write (demo.jsonnet, paper.jsonnet).
package specs
