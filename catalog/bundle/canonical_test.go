package bundle

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

// FuzzCanonical: the direct encoder writes what the round trip through encoding/json writes, for any
// document the reader takes.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		goodCSV, goodCRD,
		"a: <b> & c\nb: 1.0\nc: 1e21\nd: 1e-7\ne: -0.5\nf: 12345678901234567890\ng: \"\\u2028x\\ty\"\nh: [null, true, {}]\n",
		"{\"z\": 1, \"a\": {\"y\": [1, 2.5, \"s\"], \"b\": false}}",
		manyKeys(),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, fs := catalog.ParseDocuments("f.yaml", data, catalog.Limits{MaxDepth: 40, MaxAliasExpansion: 1000})
		if catalog.HasErrors(fs) {
			return
		}
		for i := range docs {
			want, err := canonicalJSON(&docs[i].Value)
			if err != nil {
				return
			}
			if got := appendCanonical(nil, &docs[i].Value); !bytes.Equal(got, want) {
				t.Fatalf("input %q:\ndirect     %s\nround trip %s", data, got, want)
			}
		}
	})
}

// manyKeys is an object of more keys than the insertion sort takes, out of order.
func manyKeys() string {
	var b strings.Builder
	for i := 40; i > 0; i-- {
		fmt.Fprintf(&b, "k%02d: %d\n", i, i)
	}
	return b.String()
}
