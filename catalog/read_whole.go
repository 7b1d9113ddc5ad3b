package catalog

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/catalogbot/catalogbot/catalog/load"
)

// Load reads every catalog file of fsys (as opm does: every regular file not
// excluded by .indexignore) and decodes the blobs into the model. Problems in
// the content are findings kept in LoadFindings; the error is only for a tree
// that could not be read at all (or a cancelled context).
func Load(ctx context.Context, fsys fs.FS, lim Limits) (*Catalog, error) {
	docs, findings, err := load.ReadFS(ctx, fsys, lim)
	if err != nil {
		return nil, err
	}
	return NewCatalog(docs, findings), nil
}

// LoadDir is Load on a directory of the local file system.
func LoadDir(ctx context.Context, dir string, lim Limits) (*Catalog, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return Load(ctx, os.DirFS(dir), lim)
}
