// Package jsonnet compiles an experiment spec written in Jsonnet into a validated specs.Experiment.
//
// A spec imports the ctxlab library with `local ctxlab = import 'ctxlab.libsonnet';`, which is embedded in the
// binary (lib/ctxlab.libsonnet); every other import is read from disk relative to the importing file, then from the
// library folders of Options.JPath (the jsonnet tool's -J and JSONNET_PATH, see SearchPath). Compile evaluates the
// spec with go-jsonnet, decodes the result strictly (an unknown field is an error), fills defaults and validates it.
// Every error it returns says where: a *Error is one line `file:line:col: message`, and Errors holds one *Error per
// problem when validation finds several. Problems found after evaluation (an unknown activity, a missing input, a
// cycle) are traced back to the line of the spec that wrote the offending literal.
package jsonnet
