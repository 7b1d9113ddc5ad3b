package crd

import kubeversion "k8s.io/apimachinery/pkg/version"

// compareKubeVersions orders served version names as the API server ranks
// them (version priority) and as OLM v1's preflight walks them: least
// preferred first. Kubernetes-style names (vN, vNalphaM, vNbetaM) come after
// every other name and rank by stability before major version (v2alpha1 <
// v1beta1 < v1 < v2); other names rank in reverse alphabetical order, so
// v1-10-0 comes before v1. It is apimachinery's own comparison, so a
// served-version pair is compared in the direction the preflight compares it.
// It returns a negative number, 0 or a positive number.
func compareKubeVersions(a, b string) int {
	return kubeversion.CompareKubeAwareVersionStrings(a, b)
}
