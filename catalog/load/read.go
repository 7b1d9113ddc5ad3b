package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/catalogbot/catalogbot/catalog/decode"
)

// Strategy is how a Reader reads a catalog tree. Every entry point (ReadFS here; catalog's Load, LoadDir,
// LoadPartial and ValidateFS) opens one Reader, the one place that decides how a tree is read: its files are
// listed once (ListFiles' walk, in walk.go), then parsed by one strategy, each file through Reader.ReadFile
// (a bounded read, the parse cache by content key, decode.ParseShared):
//
//   - Whole: every file, largest first on lim.Concurrency workers (ReadFS, catalog.Load);
//   - Partial: only the files the packages asked for need, the others known by content key from the
//     summary index (catalog.LoadPartial, with partial.go);
//   - Stream: in file order, a window of bytes ahead of the consumer, nothing cached: each package is
//     judged and let go as soon as its files are read (catalog.ValidateFS, with stream.go).
type Strategy uint8

// The strategies of a Reader.
const (
	Whole Strategy = iota
	Partial
	Stream
)

// Reader is one read of a catalog tree.
type Reader struct {
	fsys fs.FS
	// Lim has its defaults and this read's alias budget (shared by all its files).
	Lim Limits
	// Set is the tree's catalog files (ListFiles).
	Set FileSet
	// Keyer names file contents (a git tree), for Lim.Cache and Lim.Index; nil when fsys cannot.
	Keyer ContentKeyer
}

// Open prepares a read of fsys by strategy how, walking it unless set (a ListFiles of fsys) is given.
// The error is for an I/O failure, a limit on the whole tree (files or bytes) or ctx's end.
func Open(ctx context.Context, fsys fs.FS, lim Limits, how Strategy, set *FileSet) (*Reader, error) {
	if fsys == nil {
		return nil, errors.New("read catalog: no file system given")
	}
	lim = lim.withDefaults()
	lim.aliasSpent = new(atomic.Int64)
	if how == Stream {
		// A streamed file is judged and let go: keeping its parse would hold the catalog.
		lim.Cache = nil
	}
	r := &Reader{fsys: fsys, Lim: lim}
	r.Keyer, _ = fsys.(ContentKeyer)
	if set != nil {
		r.Set = *set
		return r, nil
	}
	var err error
	if r.Set, err = listFiles(ctx, fsys, lim); err != nil {
		return nil, err
	}
	return r, nil
}

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
	r, err := Open(ctx, fsys, lim, Whole, nil)
	if err != nil {
		return nil, nil, err
	}
	results, err := r.Parse(ctx, r.Set.Files, nil)
	if err != nil {
		return nil, nil, err
	}
	docs, findings := JoinResults(r.Set.Findings, results)
	return docs, findings, nil
}

// JoinResults puts the files' documents in the files' order and their
// findings, with the tree's, in the findings' order.
func JoinResults(treeFindings []Finding, results []Result) ([]Doc, []Finding) {
	findings := append([]Finding(nil), treeFindings...)
	n := 0
	for i := range results {
		n += len(results[i].Docs)
	}
	docs := make([]Doc, 0, n)
	for i := range results {
		docs = append(docs, results[i].Docs...)
		findings = append(findings, results[i].Findings...)
	}
	SortFindings(findings)
	return docs, findings
}

// Result is the parse of one file.
type Result struct {
	Docs     []Doc
	Findings []Finding
	// Aliases is set when the file's YAML expanded aliases (see FileSummary.Aliases).
	Aliases bool
}

// Parse parses files on lim.Concurrency workers; results keep the order of files. When keep is
// set it sees each file's result as soon as it is parsed and says whether
// to keep it: a result not kept is dropped at once (its slot stays empty),
// so a read that only needs a few files' blobs does not hold every file.
func (r *Reader) Parse(ctx context.Context, files []CatalogFile, keep func(i int, res *Result) bool) ([]Result, error) {
	lim := r.Lim
	results := make([]Result, len(files))
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
				var res Result
				var err error
				res, buf, err = r.ReadFile(files[i], read, &total, buf)
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

// ruleHints maps each loader rule id to its table entry (an immutable table, built on first use rather than
// by every process at start: issue 33.1).
var ruleHints = sync.OnceValue(func() map[string]Rule {
	m := map[string]Rule{}
	for _, r := range Rules() {
		m[r.ID] = r
	}
	return m
})

func newLoadFinding(rule, file, msg string) Finding {
	r := ruleHints()[rule]
	return Finding{Rule: rule, Severity: r.Severity, Position: Position{File: file, Line: 1}, Message: msg, Hint: r.Hint}
}

// ReadFile reads and parses one file, reading into buf when it is
// large enough; read is this read's number in the parse cache (0: none). spare is a buffer the caller may pass again: buf, or the one
// read into, unless the documents keep it. The error is for I/O failure and
// the tree's byte limit only.
func (r *Reader) ReadFile(f CatalogFile, read int64, total *atomic.Int64, buf []byte) (res Result, spare []byte, err error) {
	lim := r.Lim
	if f.Size > lim.MaxFileSize {
		return Result{Findings: []Finding{newLoadFinding(decode.RuleFileTooLarge, f.Path,
			fmt.Sprintf("file is %d bytes, over the limit of %d bytes; it was not read", f.Size, lim.MaxFileSize))}}, buf, nil
	}
	var key string
	if r.Keyer != nil && lim.Cache != nil {
		if k := FileKey(r.Keyer, f); k != "" {
			key = k
			if res, ok := lim.Cache.get(read, key, f.Path); ok {
				if total.Add(f.Size) > lim.MaxTotalSize {
					return Result{}, buf, fmt.Errorf("read catalog: files exceed %d bytes in total (raise the limit if the catalog is genuine)", lim.MaxTotalSize)
				}
				return res, buf, nil
			}
		}
	}
	data, err := readBounded(r.fsys, f.Path, lim.MaxFileSize, buf)
	if errors.Is(err, errTooLarge) {
		return Result{Findings: []Finding{newLoadFinding(decode.RuleFileTooLarge, f.Path,
			fmt.Sprintf("file grew over the limit of %d bytes while read; it was not read", lim.MaxFileSize))}}, buf, nil
	}
	if err != nil {
		return Result{}, buf, fmt.Errorf("read catalog: %s: %w", f.Path, err)
	}
	if total.Add(int64(len(data))) > lim.MaxTotalSize {
		return Result{}, data[:0], fmt.Errorf("read catalog: files exceed %d bytes in total (raise the limit if the catalog is genuine)", lim.MaxTotalSize)
	}
	if len(data) == 0 {
		return Result{}, data[:0], nil
	}
	// The parser slices strings out of the buffer without copying; they
	// are moved out of it afterwards unless they make up most of the file,
	// in which case the documents keep the buffer and it is never written
	// again.
	parsed, kept := decode.ParseShared(f.Path, data, lim.Decoding())
	res = Result{Docs: parsed.Docs, Findings: parsed.Findings, Aliases: parsed.Aliases}
	if !kept {
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
