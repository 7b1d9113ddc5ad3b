package catalog

import (
	"context"
	"io/fs"

	"github.com/catalogbot/catalogbot/catalog/load"
)

// PartialOptions says what LoadPartial must read.
type PartialOptions struct {
	// Packages are the packages the caller will judge (Validate with these
	// Packages, their graphs, their bundles).
	Packages []string
	// Files are parsed whatever they hold (root-relative paths): the files a
	// pull request changed. With PackagesOfFiles, every package a blob or
	// finding of theirs belongs to is judged too.
	Files           map[string]bool
	PackagesOfFiles bool
}

// LoadPartial reads from set (ListFiles of fsys) only what judging
// opt.Packages needs, and returns a catalog on which Validate limited to those
// packages reports exactly what it reports on the whole catalog: every blob
// of the packages asked for, of packages declared more than once (the
// catalog-wide duplicate rule), of the packages their bundles require
// (olm.package.required is checked against the required package's
// versions), every blob of no package and every file with a finding of its
// own (catalog-wide findings), plus set.Findings. Blobs keep the order a
// whole load gives them, so "first declared at" and the like do not move.
//
// Which package each file holds comes from lim.Index by content key when
// fsys names contents (a git tree): an unchanged file is then not even
// read. A file the index does not know is parsed once, summarized into the
// index, and kept only when it is needed, so a first load holds the wanted
// packages, not the catalog.
func LoadPartial(ctx context.Context, fsys fs.FS, set load.FileSet, opt PartialOptions, lim Limits) (*Catalog, *load.Outline, error) {
	r, err := load.Open(ctx, fsys, lim, load.Partial, &set)
	if err != nil {
		return nil, nil, err
	}
	lim = r.Lim
	files := set.Files
	out := &load.Outline{Files: files, Summaries: make([]load.FileSummary, len(files)), Parsed: make([]bool, len(files)), Wanted: map[string]bool{"": true}}
	for _, p := range opt.Packages {
		out.Wanted[p] = true
	}
	keyer := r.Keyer
	keys := make([]string, len(files))
	var asked, rest []int // files to parse: those asked for, and those the index does not know
	for i, f := range files {
		if keyer != nil {
			keys[i] = load.FileKey(keyer, f)
		}
		switch {
		case opt.Files[f.Path]:
			asked = append(asked, i)
			continue
		case keys[i] != "" && lim.Index != nil:
			if s, ok := lim.Index.Get(keys[i]); ok {
				out.Summaries[i] = s
				out.FromIndex++
				continue
			}
		}
		rest = append(rest, i)
	}
	results := make([]load.Result, len(files))
	summarize := func(i int, res *load.Result) {
		s := load.Summarize(res.Docs, res.Findings)
		s.Aliases = res.Aliases
		out.Summaries[i] = s
		if lim.Index != nil && keys[i] != "" {
			lim.Index.Put(keys[i], s)
		}
	}
	// The files asked for come first: their packages decide what else is kept.
	if err := r.ReadInto(ctx, out, asked, results, func(i int, res *load.Result) bool {
		summarize(i, res)
		return true
	}); err != nil {
		return nil, nil, err
	}
	if opt.PackagesOfFiles {
		for _, i := range asked {
			for _, p := range out.Summaries[i].Packages {
				out.Wanted[p] = true
			}
		}
	}
	// Files the index does not know: parse, summarize, keep what is wanted so far.
	if err := r.ReadInto(ctx, out, rest, results, func(i int, res *load.Result) bool {
		summarize(i, res)
		return out.Summaries[i].Concerns(out.Wanted)
	}); err != nil {
		return nil, nil, err
	}
	// A package declared twice anywhere is judged by the catalog-wide rule.
	declared := map[string]int{}
	for i := range out.Summaries {
		for _, p := range out.Summaries[i].Declares {
			declared[p]++
		}
	}
	for p, n := range declared {
		if n > 1 {
			out.Wanted[p] = true
		}
	}
	if err := r.ReadWanted(ctx, out, results); err != nil {
		return nil, nil, err
	}
	c := assemble(set, results)
	// The packages the wanted bundles require are read whole, once: the
	// requirement rule only reads their declaration and versions.
	more := false
	for p := range out.Wanted {
		for _, b := range c.Package(p).bundles() {
			for _, r := range b.RequiredPackages() {
				if !out.Wanted[r.PackageName] {
					out.Wanted[r.PackageName] = true
					more = true
				}
			}
		}
	}
	if more {
		if err := r.ReadWanted(ctx, out, results); err != nil {
			return nil, nil, err
		}
		c = assemble(set, results)
	}
	return c, out, nil
}

// assemble builds the catalog of the parsed files, in the tree's order.
func assemble(set load.FileSet, results []load.Result) *Catalog {
	return NewCatalog(load.JoinResults(set.Findings, results))
}

// bundles is p's bundles, nil for a nil package.
func (p *Package) bundles() []*Bundle {
	if p == nil {
		return nil
	}
	return p.Bundles
}
