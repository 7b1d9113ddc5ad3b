package change

import (
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"sync"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// BaseDocs keeps the parsed catalog files of the base revision that the templates check and the catalog
// preview read to resolve bundle images and to compare with, once for both (they run at the same time), and
// once for every file of the same content: the community's catalogs/v4.17 to v4.22 of a package are often
// one blob, parsed here once and shared under each name. What it returns is shared and must not be
// modified.
type BaseDocs struct {
	mu     sync.Mutex
	byName map[string][]catalog.Doc // nil: could not be read, or absent
	errs   map[string]error
	byKey  map[string][]catalog.Doc // a content key's documents, as parsed under the first name
}

func newBaseDocs() *BaseDocs {
	return &BaseDocs{byName: map[string][]catalog.Doc{}, errs: map[string]error{}, byKey: map[string][]catalog.Doc{}}
}

// BaseDocsOf is pr's shared BaseDocs (one of its own when Prepare has not run).
func BaseDocsOf(pr *PullRequest) *BaseDocs {
	if pr.Changes != nil && pr.Changes.baseDocs != nil {
		return pr.Changes.baseDocs
	}
	return newBaseDocs()
}

// docsOf is the documents of the base's catalog file name (false when it cannot be read: absent, or an
// error kept for errOf).
func (b *BaseDocs) DocsOf(pr *PullRequest, name string) ([]catalog.Doc, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if docs, ok := b.byName[name]; ok {
		return docs, docs != nil
	}
	key := ""
	if keyer, ok := pr.Base.FS.(load.ContentKeyer); ok {
		key, _ = keyer.ContentKey(name)
	}
	if shared, ok := b.byKey[key]; ok && key != "" {
		docs := renamed(shared, name)
		b.byName[name] = docs
		return docs, true
	}
	data, err := pkgtemplate.ReadFileCapped(pr.Base.FS, name, pkgtemplate.MaxFileOf(pr.Limits))
	if err != nil {
		b.errs[name] = err
	}
	var docs []catalog.Doc
	if err == nil && data != nil {
		docs, _ = catalog.ParseFile(name, data, pr.Limits)
		if docs == nil {
			docs = []catalog.Doc{}
		}
		if key != "" {
			b.byKey[key] = docs
		}
	}
	b.byName[name] = docs
	return docs, docs != nil
}

// errOf is why the base's catalog file name could not be read (nil when it was, or is absent).
func (b *BaseDocs) ErrOf(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs[name]
}

// renamed is docs as if parsed from the file name: the documents' positions name it; their values, which
// hold lines and columns only, are shared.
func renamed(docs []catalog.Doc, name string) []catalog.Doc {
	out := make([]catalog.Doc, len(docs))
	copy(out, docs)
	for i := range out {
		out[i].Pos.File = name
	}
	return out
}
