package opmdiff

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogbot/catalogbot/catalog"
)

// opmRead is what opm's loader makes of one catalog file: its blobs, or the error that stops it.
func opmRead(data []byte) (blobs []map[string]any, err error) {
	var mu sync.Mutex
	fsys := fstest.MapFS{"catalog.yaml": {Data: data}}
	err = declcfg.WalkMetasFS(context.Background(), fsys, func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		var v map[string]any
		if err := json.Unmarshal(m.Blob, &v); err != nil {
			return err
		}
		if m.Schema == "" {
			return errMissingSchema
		}
		mu.Lock()
		blobs = append(blobs, v)
		mu.Unlock()
		return nil
	}, declcfg.WithConcurrency(1))
	return blobs, err
}

type missingSchema struct{}

func (missingSchema) Error() string { return "blob without schema (opm's loader refuses it)" }

var errMissingSchema error = missingSchema{}

// ourRead is what catalogbot's reader makes of the same file: its documents as JSON data, or the first error.
func ourRead(data []byte) ([]map[string]any, *catalog.Finding) {
	docs, fs := catalog.ParseFile("catalog.yaml", data, catalog.Limits{})
	for i := range fs {
		if fs[i].Severity == catalog.SeverityError {
			return nil, &fs[i]
		}
	}
	out := make([]map[string]any, 0, len(docs))
	for _, d := range docs {
		b, err := json.Marshal(d.Value)
		if err != nil {
			return nil, &catalog.Finding{Rule: "marshal", Message: err.Error()}
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, &catalog.Finding{Rule: "unmarshal", Message: err.Error()}
		}
		out = append(out, v)
	}
	return out, nil
}

// seeds are the opm parity corpus's catalog files and a few shapes the parsers treat specially.
func seeds(tb testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "opm-parity", "cases", "*", "catalog", "*"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && len(data) < 64<<10 {
			out = append(out, data)
		}
	}
	for _, s := range []string{
		"schema: olm.package\nname: p\n",
		"{\"schema\":\"olm.package\",\"name\":\"p\"}",
		"schema: olm.package\nname: p\nss: 1\n\u00df: 2\n",
		"schema: olm.package\nname: p\ndescription: |\r\r\n  one\r\r\n  two\r\r\n",
		"schema: olm.package\nname: p\n\"" + strings.Repeat("k", 1023) + "\": 1\n",
		"---\nschema: a\n---\nschema: b\nx: &a [1, 2]\ny: *a\n",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzAgainstOpm: for any file, catalogbot accepts it exactly when opm's loader does, and then reads the same
// blobs (schema, package, name and every value).
func FuzzAgainstOpm(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		done := make(chan struct{})
		var theirs []map[string]any
		var theirErr error
		go func() {
			defer close(done)
			theirs, theirErr = opmRead(data)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Skip("opm's loader did not finish in 20 s")
		}
		ours, ourErr := ourRead(data)
		switch {
		case theirErr != nil && ourErr == nil:
			t.Fatalf("opm refuses, catalogbot accepts:\ninput %q\nopm: %v", data, theirErr)
		case theirErr == nil && ourErr != nil && deliberate(data, ourErr):
			return
		case theirErr == nil && ourErr != nil:
			t.Fatalf("opm accepts, catalogbot refuses:\ninput %q\ncatalogbot: %s", data, ourErr)
		case theirErr != nil:
			return
		}
		if len(theirs) != len(ours) {
			t.Fatalf("opm reads %d blobs, catalogbot %d:\ninput %q", len(theirs), len(ours), data)
		}
		for i := range theirs {
			if !reflect.DeepEqual(theirs[i], ours[i]) {
				t.Fatalf("blob %d differs:\ninput %q\nopm:        %v\ncatalogbot: %v", i, data, theirs[i], ours[i])
			}
		}
	})
}

// deliberate says whether a refusal is one of catalogbot's documented differences from opm v1.60.0 (the
// opm-parity corpus's "expect" files, docs/rules.md): a file that starts with '{' is a JSON stream and
// malformed JSON (or a number beyond float64) is an error, where opm silently re-reads the file as YAML.
func deliberate(data []byte, f *catalog.Finding) bool {
	if f.Rule != "load.json-syntax" && f.Rule != "load.number-range" {
		return false
	}
	head := data
	if len(head) > 4096 {
		head = head[:4096]
	}
	trimmed := strings.TrimLeft(string(head), " \t\r\n")
	return strings.HasPrefix(trimmed, "{")
}
