// Package opmdiff fuzzes catalogbot's catalog reader against opm's own (operator-registry's declcfg loader,
// the code behind opm validate): the same bytes go to both, and the verdicts and, when both accept, the
// blobs must agree. It is a module of its own so that operator-registry and its dependencies never enter
// catalogbot's; .ci/run fuzzes it briefly, scripts/fuzz-opm-diff.sh for as long as you like.
package opmdiff
