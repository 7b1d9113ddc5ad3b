package catalog

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog/decode"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// FSValidation is what ValidateFS says about a catalog.
type FSValidation struct {
	// Findings are those Validate(Load(fsys)) returns, in the same order.
	Findings []Finding
	// Packages counts the packages an olm.package blob declares and Bundles
	// the olm.bundle blobs of every package name, as Catalog.Packages would.
	Packages, Bundles int
	// Stats say how much the read held and read again.
	Stats StreamStats
}

// StreamStats describe one ValidateFS.
type StreamStats struct {
	Files int // catalog files read
	// Reread counts files read a second time: a package whose blobs were
	// judged turned up again in a later file (its files are far apart in
	// lexical order), so its earlier files were read again and the package
	// is then kept until the end.
	Reread int
	// PeakHeldDocs is the most blobs held at once by packages not yet
	// judged; PeakHeldBytes the most file bytes parsed ahead and not yet
	// taken (see streamAhead).
	PeakHeldDocs  int
	PeakHeldBytes int64
}

// ValidateFS is Validate(Load(fsys)) for a whole catalog, findings
// included, without ever holding the whole parsed catalog: files are read
// in lexical order (parsed ahead on lim.Concurrency workers), and a package
// is judged and let go once a few files have gone by without a blob of it.
// The memory it needs follows the largest files and packages, not the
// catalog.
//
// Packages are independent but for three facts, which it keeps for every
// package: whether an olm.package blob declares it and the versions of its
// bundles (olm.package.required properties are judged against them once
// every package is read), and the files its blobs are in (a package that
// turns up again after it was judged is judged again with its earlier
// files read a second time). A file's own findings are kept as it is read.
// lim.Cache is not used. The one budget that depends on the order files
// are read in, MaxAliasExpansionPerRead, is spent in lexical order here
// (ReadFS parses the largest files first, several at once), so which file
// goes over it may differ, as it may between two ReadFS.
//
// The error is Load's: an I/O failure, a limit on the whole tree, ctx's end.
func ValidateFS(ctx context.Context, fsys fs.FS, lim Limits) (*FSValidation, error) {
	return validateStream(ctx, fsys, lim, streamLagFiles, streamLagBytes)
}

func validateStream(ctx context.Context, fsys fs.FS, lim Limits, lagFiles int, lagBytes int64) (*FSValidation, error) {
	r, err := load.Open(ctx, fsys, lim, load.Stream, nil)
	if err != nil {
		return nil, err
	}
	s := newStreamValidator(r, lagFiles, lagBytes)
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	return s.result(r.Set.Findings), nil
}

// ValidateDir is ValidateFS on a directory of the local file system.
func ValidateDir(ctx context.Context, dir string, lim Limits) (*FSValidation, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return ValidateFS(ctx, os.DirFS(dir), lim)
}

// A package is judged once streamLagFiles files, or streamLagBytes bytes of
// files, have been read after its last blob. Catalogs keep a package's files
// together (a folder per package), so a short lag is enough; a longer one
// only holds more.
const (
	streamLagFiles = 8
	streamLagBytes = 8 << 20
)

type streamValidator struct {
	r     *load.Reader
	files []load.CatalogFile
	lim   Limits
	// lagFiles and lagBytes: streamLagFiles and streamLagBytes (tests
	// lower them to read packages again often).
	lagFiles int
	lagBytes int64
	// end[i] is the bytes of files 0..i.
	end    []int64
	broken []bool // the file did not read whole (see stopsReading)
	// stash keeps the blobs of files whose YAML expanded aliases: read
	// again, such a file could spend the read's alias budget twice.
	stash map[int][]Doc

	pkgs  map[string]*streamPackage
	queue []streamQueued // packages by their last file, oldest first
	qhead int

	found []Finding    // the files' own findings
	held  atomic.Int64 // blobs held by packages not judged yet
	stats StreamStats

	// Packages are judged on lim.Concurrency goroutines while the files
	// that follow are read; pending counts those given and not judged.
	jobs    chan *streamPackage
	pending sync.WaitGroup
}

// streamPackage is one package name as the stream knows it. The fields up to
// judged are the reading goroutine's; the others are written by the judging
// goroutine, and read once it is done (streamValidator.pending).
type streamPackage struct {
	name   string  // its own copy
	files  []int32 // the files holding its blobs, ascending
	open   bool    // blobs held, not given to be judged yet
	keep   bool    // read again once: judged only at the end
	judged bool    // given to be judged

	// Its blobs until judged, then its findings (the model's load findings
	// and the rules'), the requirements left for the end, and its facts.
	docs     []Doc
	findings []Finding
	required []streamRequirement
	declared bool
	bundles  int
	versions string // the versions of its bundles that parse, one a line
}

type streamQueued struct {
	p    *streamPackage
	file int
}

// streamRequirement is an olm.package.required property left for the end.
type streamRequirement struct {
	bundle string
	req    PackageRequired
}

func newStreamValidator(r *load.Reader, lagFiles int, lagBytes int64) *streamValidator {
	files := r.Set.Files
	s := &streamValidator{r: r, files: files, lim: r.Lim, lagFiles: lagFiles, lagBytes: lagBytes,
		end: make([]int64, len(files)), broken: make([]bool, len(files)),
		stash: map[int][]Doc{}, pkgs: map[string]*streamPackage{}}
	var sum int64
	for i, f := range files {
		sum += f.Size
		s.end[i] = sum
	}
	return s
}

// run reads every file in order and judges every package.
func (s *streamValidator) run(ctx context.Context) error {
	jobs := make(chan *streamPackage, s.lim.Concurrency)
	s.jobs = jobs
	var judges sync.WaitGroup
	for range s.lim.Concurrency {
		judges.Add(1)
		go func() {
			defer judges.Done()
			for p := range jobs {
				s.judge(p)
				s.pending.Done()
			}
		}()
	}
	closed := false
	defer func() {
		if !closed {
			close(jobs)
			judges.Wait()
		}
	}()
	ahead := load.NewStreamAhead(s.r)
	stop := ahead.Start(ctx)
	defer stop()
	for i := range s.files {
		r, err := ahead.Take(i)
		if err != nil {
			return err
		}
		if err := s.file(i, r); err != nil {
			return err
		}
		s.judgeDue(i)
	}
	stop()
	s.stats.PeakHeldBytes = ahead.Peak()
	s.queue = nil
	for _, p := range s.pkgs {
		if p.open {
			s.give(p)
		}
	}
	close(jobs)
	closed = true
	judges.Wait()
	return nil
}

// give hands a package to be judged.
func (s *streamValidator) give(p *streamPackage) {
	p.open, p.judged = false, true
	s.pending.Add(1)
	s.jobs <- p
}

// file takes the parse of file i: its findings, and its blobs to their packages.
func (s *streamValidator) file(i int, r *load.Result) error {
	s.stats.Files++
	for _, f := range r.Findings {
		if f.Severity == SeverityError && f.File != "" && decode.StopsReading(f.Rule) {
			s.broken[i] = true
		}
	}
	s.found = append(s.found, r.Findings...)
	if r.Aliases && len(r.Docs) > 0 {
		s.stash[i] = r.Docs
	}
	var p *streamPackage
	for j := range r.Docs {
		d := &r.Docs[j]
		name, ok := packageOf(d)
		if !ok {
			continue
		}
		if p == nil || p.name != name {
			p = s.pkgs[name]
			if p == nil {
				p = &streamPackage{name: strings.Clone(name)}
				s.pkgs[p.name] = p
			}
			if n := len(p.files); n == 0 || int(p.files[n-1]) != i {
				if p.judged && !p.open {
					if err := s.reopen(p); err != nil {
						return err
					}
				}
				p.open = true
				p.files = append(p.files, int32(i))
				s.queue = append(s.queue, streamQueued{p, i})
			}
		}
		p.docs = append(p.docs, *d)
		s.held.Add(1)
	}
	s.stats.PeakHeldDocs = max(s.stats.PeakHeldDocs, int(s.held.Load()))
	return nil
}

// packageOf names the package a blob belongs to in the model (NewCatalog),
// or says it belongs to none.
func packageOf(d *Doc) (string, bool) {
	switch d.Schema {
	case SchemaPackage:
		return d.Name, true
	case SchemaChannel, SchemaBundle, SchemaDeprecation:
		return d.Package, true
	}
	return "", false
}

// judgeDue judges the packages whose last file is far enough behind file i.
func (s *streamValidator) judgeDue(i int) {
	for s.qhead < len(s.queue) {
		q := s.queue[s.qhead]
		if i-q.file < s.lagFiles && s.end[i]-s.end[q.file] < s.lagBytes {
			break
		}
		s.queue[s.qhead] = streamQueued{}
		s.qhead++
		if p := q.p; p.open && !p.keep && int(p.files[len(p.files)-1]) == q.file {
			s.give(p)
		}
	}
	if s.qhead > 1024 && s.qhead*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.qhead:]...)
		s.qhead = 0
	}
}

// reopen takes back the blobs of a judged package from its files, read
// again, and forgets the judgement.
func (s *streamValidator) reopen(p *streamPackage) error {
	s.pending.Wait() // p's judgement among them
	var buf []byte
	var total atomic.Int64 // the files were counted the first time
	for _, i := range p.files {
		docs, ok := s.stash[int(i)]
		if !ok {
			r, spare, err := s.r.ReadFile(s.files[i], 0, &total, buf)
			if err != nil {
				return err
			}
			docs, buf = r.Docs, spare
			s.stats.Reread++
		}
		for j := range docs {
			if name, ok := packageOf(&docs[j]); ok && name == p.name {
				p.docs = append(p.docs, docs[j])
				s.held.Add(1)
			}
		}
	}
	p.judged, p.keep = false, true
	p.findings, p.required, p.versions = nil, nil, ""
	return nil
}

// judge validates one package from its blobs, as Validate would within the
// whole catalog, keeps what the end needs and lets the blobs go. It reads
// only p's blobs and the files' broken marks, set before p was given.
func (s *streamValidator) judge(p *streamPackage) {
	c := NewCatalog(p.docs, nil)
	pkg := c.Packages[0] // every blob of p.docs is of p
	v := newValidator(c)
	v.required = func(_ *Package, b *Bundle, r PackageRequired) {
		r.PackageName, r.VersionRange = strings.Clone(r.PackageName), strings.Clone(r.VersionRange)
		p.required = append(p.required, streamRequirement{bundle: strings.Clone(b.Name), req: r})
	}
	v.packageDuplicates(pkg)
	broken := map[string]bool{}
	for _, i := range p.files {
		if s.broken[i] {
			broken[s.files[i].Path] = true
		}
	}
	if !inBrokenFile(pkg, broken) {
		v.pkg(pkg)
	}
	// Findings outlive the blobs: none may point into a file's strings.
	p.findings = append(c.LoadFindings, v.out...)
	for i := range p.findings {
		f := &p.findings[i]
		if f.Package == p.name {
			f.Package = p.name
		} else {
			f.Package = strings.Clone(f.Package)
		}
	}
	p.declared, p.bundles = pkg.Declared, len(pkg.Bundles)
	if pkg.Declared {
		var vs strings.Builder
		for _, b := range pkg.bundleByName {
			if pp, ok := b.PackageProperty(); ok {
				if _, err := blang.Parse(pp.Version); err == nil {
					vs.WriteString(pp.Version) // semver has no line breaks
					vs.WriteByte('\n')
				}
			}
		}
		p.versions = vs.String()
	}
	s.held.Add(-int64(len(p.docs)))
	p.docs = nil
}

// result puts every finding together, the requirements judged last.
func (s *streamValidator) result(treeFindings []Finding) *FSValidation {
	out := &FSValidation{Stats: s.stats}
	all := append(treeFindings, s.found...)
	req := &validator{}
	for _, p := range s.pkgs {
		all = append(all, p.findings...)
		if p.declared {
			out.Packages++
		}
		out.Bundles += p.bundles
		for _, r := range p.required {
			target := s.pkgs[r.req.PackageName]
			declared := target != nil && target.declared
			req.requirement(p.name, r.bundle, r.req, declared, func(yield func(blang.Version) bool) {
				for line := range strings.Lines(target.versions) {
					ver, err := blang.Parse(strings.TrimSuffix(line, "\n"))
					if err == nil && !yield(ver) {
						return
					}
				}
			})
		}
	}
	all = append(all, req.out...)
	if len(all) > 0 {
		SortFindings(all)
		out.Findings = all
	}
	return out
}
