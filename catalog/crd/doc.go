// Package crd reads CustomResourceDefinitions into a compact schema model and
// judges whether replacing one set of CRDs by another is safe for objects already
// stored in a cluster (OLM's CRD upgrade-safety preflight, done before release).
package crd
