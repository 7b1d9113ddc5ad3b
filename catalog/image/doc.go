// Package image builds a catalog image without Docker: it takes a base image
// pinned by digest (a multi-arch index or one image), keeps its layers as they
// are, appends one deterministic layer holding the catalog under /configs, and
// sets the label, entrypoint and command opm serve needs. The same catalog on
// the same base always gives the same digest.
package image
