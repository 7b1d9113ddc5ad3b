package catalog_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

// One YAML syntax error gives one finding: the channel it swallowed does not also come back as "the default
// channel is missing" and "the bundle is in no channel" (opm stops at the syntax error too).
func TestSyntaxErrorDoesNotCascade(t *testing.T) {
	fsys := fstest.MapFS{"p/catalog.yaml": {Data: []byte("schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\npackage: p\nname: s\nentries:\n  - name: p.v1\n   bad: indent\n---\nschema: olm.bundle\npackage: p\nname: p.v1\nimage: quay.io/a/b:v1\nproperties:\n  - type: olm.package\n    value: {packageName: p, version: 1.0.0}\n")}}
	c, err := catalog.Load(context.Background(), fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var errs []catalog.Finding
	for _, f := range catalog.Validate(c, catalog.ValidateOptions{}) {
		if f.Severity == catalog.SeverityError {
			errs = append(errs, f)
		}
	}
	if len(errs) != 1 || errs[0].Rule != "load.yaml-syntax" {
		t.Errorf("errors = %v, want the one load.yaml-syntax", errs)
	}
}
