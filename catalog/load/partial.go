package load

import "context"

// Outline is what every file of a tree holds, whether LoadPartial parsed it
// or knew it from the index.
type Outline struct {
	// Files are the tree's catalog files in lexical order; Summaries[i] is
	// of Files[i], and Parsed[i] says whether its blobs are in the catalog.
	Files     []CatalogFile
	Summaries []FileSummary
	Parsed    []bool
	// Wanted are the packages whose blobs the catalog holds all of: the
	// packages asked for, those declared more than once, those their
	// bundles require, and "" (blobs of no package).
	Wanted map[string]bool
	// FromIndex counts the files known from the index without a parse.
	FromIndex int
}

// ReadWanted parses the files that hold something wanted and are not parsed yet.
func (r *Reader) ReadWanted(ctx context.Context, out *Outline, results []Result) error {
	var todo []int
	for i := range out.Files {
		if !out.Parsed[i] && out.Summaries[i].Concerns(out.Wanted) {
			todo = append(todo, i)
		}
	}
	return r.ReadInto(ctx, out, todo, results, nil)
}

// ReadInto parses out.Files[at...] and stores at results[i] what keep keeps
// (everything when keep is nil), marking it parsed.
func (r *Reader) ReadInto(ctx context.Context, out *Outline, at []int, results []Result, keep func(i int, res *Result) bool) error {
	if len(at) == 0 {
		return nil
	}
	sub := make([]CatalogFile, len(at))
	for k, i := range at {
		sub[k] = out.Files[i]
	}
	kept := make([]bool, len(at))
	got, err := r.Parse(ctx, sub, func(k int, res *Result) bool {
		kept[k] = keep == nil || keep(at[k], res)
		return kept[k]
	})
	if err != nil {
		return err
	}
	for k, i := range at {
		if kept[k] {
			results[i] = got[k]
			out.Parsed[i] = true
		}
	}
	return nil
}
