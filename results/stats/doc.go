// Package stats holds the statistics the paper reports, written against plain slices so every function can be
// checked by hand: issue-level bootstrap confidence intervals, the one-sided exact McNemar test on paired outcomes
// and the sign test it is a case of (on per-issue means of repeated samples), pass@k and flip rates, Holm's step-down adjustment, and logistic regression (Newton/IRLS, optionally with Firth's bias reduction so that
// separated data still give finite coefficients).
package stats
