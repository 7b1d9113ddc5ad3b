package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// The walk: which files a catalog tree consists of, as opm reads it (every regular file not excluded by an
// .indexignore, in lexical order). Every reading strategy starts from it.

// FileSet is a catalog tree's files as opm reads them: what the loader
// parses and what the catalog image holds are both taken from it, so that a
// file validation never saw (one .indexignore hides, say) cannot reach, or
// break, the image.
type FileSet struct {
	// Files are the regular files that are read, in lexical order.
	Files []CatalogFile
	// IndexIgnores are the .indexignore files whose patterns chose Files,
	// in lexical order.
	IndexIgnores []string
	// Findings are about entries that are not read although no pattern
	// excludes them (links, special files) and .indexignore files opm
	// cannot read.
	Findings []Finding
}

// CatalogFile is one file of a FileSet.
type CatalogFile struct {
	Path string // slash separated, relative to the root
	Size int64
	// Key names the content when the walk's entries know it (EntryKeyer):
	// a git blob id. Empty otherwise; ask the file system (ContentKeyer).
	Key string
}

// ListFiles walks fsys as ReadFS does, without reading the catalog files:
// the one definition of which files a catalog consists of. The error is for
// an I/O failure, a limit on the whole tree (files or bytes) or ctx's end.
func ListFiles(ctx context.Context, fsys fs.FS, lim Limits) (FileSet, error) {
	if fsys == nil {
		return FileSet{}, errors.New("read catalog: no file system given")
	}
	return listFiles(ctx, fsys, lim.withDefaults())
}

type walkEntry struct {
	path string
	kind uint8 // entryFile, entrySymlink, entryIrregular
	size int64
	key  string
}

const (
	entryFile uint8 = iota
	entrySymlink
	entryIrregular
)

func listFiles(ctx context.Context, fsys fs.FS, lim Limits) (FileSet, error) {
	var entries []walkEntry
	var patterns []gitignore.Pattern
	var ignoreFiles []string
	var ignoreFindings []Finding
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			entries = append(entries, walkEntry{path: p, kind: entrySymlink})
			return nil
		case !t.IsRegular():
			entries = append(entries, walkEntry{path: p, kind: entryIrregular})
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		if d.Name() == indexIgnoreName {
			data, err := readBounded(fsys, p, maxIndexIgnoreSize, nil)
			if err != nil {
				return fmt.Errorf("read catalog: %s: %w", p, err)
			}
			ps, finding := parseIndexIgnore(p, data)
			patterns = append(patterns, ps...)
			ignoreFiles = append(ignoreFiles, p)
			if finding != nil {
				ignoreFindings = append(ignoreFindings, *finding)
			}
			return nil
		}
		e := walkEntry{path: p, size: info.Size()}
		if k, ok := d.(EntryKeyer); ok {
			e.key, _ = k.ContentKey()
		}
		entries = append(entries, e)
		if len(entries) > lim.MaxFiles {
			return fmt.Errorf("read catalog: more than %d files (raise the limit if the catalog is genuine)", lim.MaxFiles)
		}
		return nil
	})
	if err != nil {
		return FileSet{}, err
	}
	matcher := newIgnoreMatcher(patterns)
	tree := FileSet{IndexIgnores: ignoreFiles, Findings: ignoreFindings}
	var total int64
	for _, e := range entries {
		if matcher.ignored(e.path) {
			continue
		}
		switch e.kind {
		case entrySymlink:
			tree.Findings = append(tree.Findings, newLoadFinding(ruleLoadSymlink, e.path,
				fmt.Sprintf("%s is a symbolic link; catalogbot never follows links, for safety (a git tree can point anywhere), so it was not read", e.path)))
		case entryIrregular:
			tree.Findings = append(tree.Findings, newLoadFinding(ruleLoadIrregular, e.path,
				fmt.Sprintf("%s is neither a regular file nor a directory; it was not read", e.path)))
		default:
			total += e.size
			if total > lim.MaxTotalSize {
				return FileSet{}, fmt.Errorf("read catalog: files exceed %d bytes in total (raise the limit if the catalog is genuine)", lim.MaxTotalSize)
			}
			tree.Files = append(tree.Files, CatalogFile{Path: e.path, Size: e.size, Key: e.key})
		}
	}
	return tree, nil
}

// indexIgnoreName is the file opm reads ignore patterns from, in any directory.
const indexIgnoreName = ".indexignore"

// maxIndexIgnoreSize bounds one .indexignore file.
const maxIndexIgnoreSize = 1 << 20

// parseIndexIgnore reads the patterns of one .indexignore file found at
// filePath (slash separated, relative to the root). As opm does (through
// github.com/joelanford/ignore and go-git's gitignore), each line is trimmed,
// blank and '#' lines are skipped, and the patterns apply below the file's
// own directory.
func parseIndexIgnore(filePath string, data []byte) ([]gitignore.Pattern, *Finding) {
	var domain []string
	if dir := path.Dir(filePath); dir != "." {
		domain = strings.Split(dir, "/")
	}
	var patterns []gitignore.Pattern
	// bufio.Scanner with its default 64 KiB line limit, as opm reads it: a
	// longer line makes opm fail.
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		patterns = append(patterns, gitignore.ParsePattern(text, domain))
	}
	if err := sc.Err(); err != nil {
		f := newLoadFinding(ruleLoadIndexIgnore, filePath, fmt.Sprintf("%s cannot be read as lines of patterns (%v); opm fails on it", filePath, err))
		f.Line = line + 1
		return patterns, &f
	}
	return patterns, nil
}

// ignoreMatcher answers whether a file path is excluded. Patterns from every
// .indexignore of the tree are used together, in walk order, the last match
// winning — opm matches files only (never directories as such), which is why
// "dir/" excludes what is below dir.
type ignoreMatcher struct {
	m gitignore.Matcher
}

func newIgnoreMatcher(patterns []gitignore.Pattern) ignoreMatcher {
	if len(patterns) == 0 {
		return ignoreMatcher{}
	}
	return ignoreMatcher{m: gitignore.NewMatcher(patterns)}
}

func (m ignoreMatcher) ignored(filePath string) bool {
	return m.m != nil && m.m.Match(strings.Split(filePath, "/"), false)
}
