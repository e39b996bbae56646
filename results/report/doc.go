// Package report computes the paper's tables from the rows of a results.jsonl: per (method, model) resolve rates with
// issue-level bootstrap intervals and the context metrics, paired comparisons against an anchor (exact one-sided
// McNemar, Holm-adjusted, with significance marks; on per-issue means by the exact sign test when a method draws
// several patch samples), a budget-vs-resolve table when methods carry budget multipliers,
// a logistic regression of resolve on context features, and frozen predictions for methods not yet graded. It
// renders them as Markdown, CSV and LaTeX. Every number comes from the rows it is given.
package report
