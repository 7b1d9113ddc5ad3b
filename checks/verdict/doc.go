// Package verdict is what a check run says: its conclusion (named as GitHub
// names check-run conclusions), how two conclusions combine (Worst), and the
// Result a check returns — title, summary, findings, error and duration.
//
// Layer: a leaf under checks; it imports catalog only (for findings). The
// checks produce results (checks.Result is this Result), and what reports a
// check run — app/ghapp's rendering, the post-merge rebuild's own runs in
// app/rebuild — names them from here without importing the checks.
package verdict
