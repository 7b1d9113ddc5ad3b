package opmdiff

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// TestOperatorHubSuiteMatchesTheValidator: on the bundles of the shared test data and on variants breaking one
// of its rules, catalogbot's optional suite operatorhub finds an error exactly when operator-framework/api's
// OperatorHub validator (operator-sdk's --select-optional suite=operatorhub) reports one.
func TestOperatorHubSuiteMatchesTheValidator(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	var dirs []string
	for _, a := range anns {
		dirs = append(dirs, filepath.Dir(filepath.Dir(a)))
	}
	edits := map[string]func(string) string{
		"no provider":        func(c string) string { return dropBlock(c, "provider:") },
		"maintainer email":   func(c string) string { return strings.Replace(c, "email: ", "email: x@", 1) },
		"link url":           func(c string) string { return strings.Replace(c, "url: https://", "url: ", 1) },
		"icon mediatype":     func(c string) string { return strings.Replace(c, "mediatype: image/", "mediatype: text/", 1) },
		"version not semver": func(c string) string { return strings.Replace(c, "\n  version: ", "\n  version: x", 1) },
		"category unknown": func(c string) string {
			return strings.Replace(c, "\n    categories: ", "\n    categories: Gardening,", 1)
		},
		"capability unknown": func(c string) string {
			return strings.Replace(c, "\n    capabilities: ", "\n    capabilities: Some ", 1)
		},
		"category added": func(c string) string {
			return strings.Replace(c, "\n  annotations:\n", "\n  annotations:\n    categories: Observability, Security\n", 1)
		},
	}
	real := len(dirs)
	for _, name := range []string{"no provider", "maintainer email", "link url", "icon mediatype", "version not semver", "category unknown", "capability unknown", "category added"} {
		// The first bundle the edit changes.
		for _, src := range dirs[:real] {
			csvs, _ := filepath.Glob(filepath.Join(src, "manifests", "*.clusterserviceversion.yaml"))
			if len(csvs) == 0 {
				continue
			}
			data, err := os.ReadFile(csvs[0])
			if err != nil || edits[name](string(data)) == string(data) {
				continue
			}
			dirs = append(dirs, variant(t, src, strings.ReplaceAll(name, " ", "-"), edits[name]))
			break
		}
	}
	agree, refused := 0, 0
	for _, dir := range dirs {
		b, fs, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil || b.CSV == nil {
			continue
		}
		ours := catalog.HasErrors(bundle.OperatorHub(b))
		for _, f := range fs {
			if f.Rule == "bundle.csv-min-kube-version" && f.Severity == catalog.SeverityError {
				ours = true // the suite checks it too; catalogbot reports it by default
			}
		}
		theirs, why := hubVerdict(dir)
		if ours != theirs {
			t.Errorf("%s: catalogbot operatorhub errors=%v, validator errors=%v\ncatalogbot: %v\nvalidator: %s", dir, ours, theirs, bundle.OperatorHub(b), why)
			continue
		}
		agree++
		if theirs {
			refused++
		}
	}
	t.Logf("%d bundle directories: %d operatorhub verdicts agree (%d refused by both)", len(dirs), agree, refused)
	if refused < 5 {
		t.Errorf("only %d directories refused: the variants do not break what they should", refused)
	}
}

func hubVerdict(dir string) (bool, string) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return true, err.Error()
	}
	var msgs []string
	invalid := false
	// operator-sdk's name=operatorhub: the v2 validator and the capabilities and categories ones (what the
	// deprecated OperatorHub validator runs). The removed-APIs part of its errors is compared in
	// TestRemovedAPIsMatchTheValidator.
	for _, v := range []interfaces.Validator{validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator, validation.StandardCategoriesValidator} {
		for _, r := range v.Validate(b) {
			for _, e := range r.Errors {
				if e.Type == apierrors.ErrorFailedValidation && strings.Contains(e.Detail, "deprecated and removed") {
					continue
				}
				invalid = true
				msgs = append(msgs, e.Error())
			}
		}
	}
	return invalid, strings.Join(msgs, "; ")
}

// TestGoodPracticesSuiteMatchesTheValidator: on the bundles of the shared test data, catalogbot's optional
// suite good-practices gives the errors and as many warnings as operator-framework/api's GoodPractices
// validator.
func TestGoodPracticesSuiteMatchesTheValidator(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	agree, warned := 0, 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		b, _, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil || b.CSV == nil {
			continue
		}
		ours := bundle.GoodPractices(b)
		ourErrs, ourWarns := 0, 0
		for _, f := range ours {
			if f.Severity == catalog.SeverityError {
				ourErrs++
			} else {
				ourWarns++
			}
		}
		mb, err := manifests.GetBundleFromDir(dir)
		if err != nil {
			continue
		}
		theirErrs, theirWarns := 0, 0
		var msgs []string
		for _, r := range validation.GoodPracticesValidator.Validate(mb) {
			theirErrs += len(r.Errors)
			theirWarns += len(r.Warnings)
			for _, w := range r.Warnings {
				msgs = append(msgs, w.Error())
			}
		}
		if (ourErrs > 0) != (theirErrs > 0) || ourWarns != theirWarns {
			t.Errorf("%s: catalogbot %d errors %d warnings, validator %d errors %d warnings\ncatalogbot: %v\nvalidator: %s", dir, ourErrs, ourWarns, theirErrs, theirWarns, ours, strings.Join(msgs, "\n  "))
			continue
		}
		agree++
		warned += ourWarns
	}
	t.Logf("%d bundle directories: %d good-practices verdicts agree (%d warnings in all)", len(anns), agree, warned)
}
