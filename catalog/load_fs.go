package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ReadFS reads every catalog file of fsys as opm v1.60.0 does: it walks the
// tree in lexical order, skips .indexignore files and what their patterns
// exclude, and parses every other regular file whatever its name. Files are
// parsed concurrently (lim.Concurrency at once); the documents come back in
// lexical file order, then document order. Symbolic links are never
// followed: each is a load.symlink finding.
//
// The error is only for an I/O failure, a limit on the whole tree (too many
// files or bytes) or ctx's end; everything wrong inside a file is a finding.
func ReadFS(ctx context.Context, fsys fs.FS, lim Limits) ([]Doc, []Finding, error) {
	if fsys == nil {
		return nil, nil, errors.New("read catalog: no file system given")
	}
	lim = lim.withDefaults()
	lim.aliasSpent = new(atomic.Int64)
	tree, err := listFiles(ctx, fsys, lim)
	if err != nil {
		return nil, nil, err
	}
	results, err := readFiles(ctx, fsys, tree.Files, lim, nil)
	if err != nil {
		return nil, nil, err
	}
	docs, findings := joinResults(tree.Findings, results)
	return docs, findings, nil
}

// joinResults puts the files' documents in the files' order and their
// findings, with the tree's, in the findings' order.
func joinResults(treeFindings []Finding, results []fileResult) ([]Doc, []Finding) {
	findings := append([]Finding(nil), treeFindings...)
	n := 0
	for i := range results {
		n += len(results[i].docs)
	}
	docs := make([]Doc, 0, n)
	for i := range results {
		docs = append(docs, results[i].docs...)
		findings = append(findings, results[i].findings...)
	}
	SortFindings(findings)
	return docs, findings
}

type fileResult struct {
	docs     []Doc
	findings []Finding
	// aliases is set when the file's YAML expanded aliases (see FileSummary.Aliases).
	aliases bool
}

// readFiles parses files (lim with defaults and its alias budget set) on
// lim.Concurrency workers; results keep the order of files. When keep is
// set it sees each file's result as soon as it is parsed and says whether
// to keep it: a result not kept is dropped at once (its slot stays empty),
// so a read that only needs a few files' blobs does not hold every file.
func readFiles(ctx context.Context, fsys fs.FS, files []CatalogFile, lim Limits, keep func(i int, r *fileResult) bool) ([]fileResult, error) {
	results := make([]fileResult, len(files))
	var total atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Largest files first, so that one big file read last does not leave
	// the other workers idle; results keep the given order.
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return files[order[a]].Size > files[order[b]].Size })

	var read int64 // this read's number in the cache, which keeps what it uses
	if lim.Cache != nil {
		read = lim.Cache.beginRead()
	}
	next := atomic.Int64{}
	workers := min(lim.Concurrency, len(files))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One read buffer per worker, reused until a file's documents
			// keep it; the largest file comes first, so it is sized once.
			var buf []byte
			for {
				k := int(next.Add(1)) - 1
				if k >= len(files) || ctx.Err() != nil {
					return
				}
				i := order[k]
				var res fileResult
				var err error
				res, buf, err = readCatalogFile(fsys, files[i], lim, read, &total, buf)
				if err != nil {
					cancel(err)
					return
				}
				if keep == nil || keep(i, &res) {
					results[i] = res
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

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

func newLoadFinding(rule, file, msg string) Finding {
	r := ruleHints[rule]
	return Finding{Rule: rule, Severity: r.Severity, Position: Position{File: file, Line: 1}, Message: msg, Hint: r.Hint}
}

// readCatalogFile reads and parses one file, reading into buf when it is
// large enough. spare is a buffer the caller may pass again: buf, or the one
// read into, unless the documents keep it. The error is for I/O failure and
// the tree's byte limit only.
func readCatalogFile(fsys fs.FS, f CatalogFile, lim Limits, read int64, total *atomic.Int64, buf []byte) (res fileResult, spare []byte, err error) {
	if f.Size > lim.MaxFileSize {
		return fileResult{findings: []Finding{newLoadFinding(ruleLoadFileTooLarge, f.Path,
			fmt.Sprintf("file is %d bytes, over the limit of %d bytes; it was not read", f.Size, lim.MaxFileSize))}}, buf, nil
	}
	var key string
	if keyer, ok := fsys.(ContentKeyer); ok && lim.Cache != nil {
		if k := fileKey(keyer, f); k != "" {
			key = k
			if res, ok := lim.Cache.get(read, key, f.Path); ok {
				if total.Add(f.Size) > lim.MaxTotalSize {
					return fileResult{}, buf, fmt.Errorf("read catalog: files exceed %d bytes in total (raise the limit if the catalog is genuine)", lim.MaxTotalSize)
				}
				return res, buf, nil
			}
		}
	}
	data, err := readBounded(fsys, f.Path, lim.MaxFileSize, buf)
	if errors.Is(err, errTooLarge) {
		return fileResult{findings: []Finding{newLoadFinding(ruleLoadFileTooLarge, f.Path,
			fmt.Sprintf("file grew over the limit of %d bytes while read; it was not read", lim.MaxFileSize))}}, buf, nil
	}
	if err != nil {
		return fileResult{}, buf, fmt.Errorf("read catalog: %s: %w", f.Path, err)
	}
	if total.Add(int64(len(data))) > lim.MaxTotalSize {
		return fileResult{}, data[:0], fmt.Errorf("read catalog: files exceed %d bytes in total (raise the limit if the catalog is genuine)", lim.MaxTotalSize)
	}
	if len(data) == 0 {
		return fileResult{}, data[:0], nil
	}
	// The parser slices strings out of the buffer without copying; they
	// are moved out of it afterwards unless they make up most of the file,
	// in which case the documents keep the buffer and it is never written
	// again.
	src := unsafe.String(unsafe.SliceData(data), len(data))
	p := newFileParser(f.Path, src, lim)
	p.parse()
	res = fileResult{docs: p.docs, findings: p.findings, aliases: p.aliasValues > 0}
	if !compactStrings(p.docs, src, cap(data), true) {
		spare = data[:0]
	}
	if key != "" {
		lim.Cache.put(read, key, f.Path, int64(len(data)), res)
	}
	return res, spare, nil
}

var errTooLarge = errors.New("file too large")

// readBounded reads a whole file, refusing more than max bytes. It reads
// into buf when the file fits in its capacity.
func readBounded(fsys fs.FS, name string, max int64, buf []byte) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(512)
	if info, err := f.Stat(); err == nil && info.Size() > 0 {
		if info.Size() > max {
			return nil, errTooLarge
		}
		size = info.Size() + 1 // one more byte to see EOF without growing
	}
	if int64(cap(buf)) >= size {
		buf = buf[:0]
	} else {
		buf = make([]byte, 0, size)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
