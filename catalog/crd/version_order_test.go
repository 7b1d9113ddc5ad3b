package crd

import (
	"testing"

	kubeversion "k8s.io/apimachinery/pkg/version"
)

// FuzzCompareKubeVersions: the order of served versions is apimachinery's, value for value.
func FuzzCompareKubeVersions(f *testing.F) {
	names := []string{"", "v", "v1", "v2", "v10", "v01", "v1alpha1", "v1alpha", "v1beta2", "v2beta1", "v1beta01",
		"v1gamma1", "v1-10-0", "V1", "v1alpha1x", "v1 ", "valpha1", "v99999999999999999999", "v1beta99999999999999999999",
		"foo", "v1alpha1beta1", "v1\u0663", "v1.0"}
	for i, a := range names {
		f.Add(a, names[(i*5+2)%len(names)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := compareKubeVersions(a, b), kubeversion.CompareKubeAwareVersionStrings(a, b); got != want {
			t.Fatalf("compareKubeVersions(%q, %q) = %d, apimachinery %d", a, b, got, want)
		}
	})
}
