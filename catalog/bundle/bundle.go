// Package bundle reads registry+v1 bundle directories (manifests/ and metadata/annotations.yaml, as
// operator-sdk writes them and the community catalog repositories keep them) from any fs.FS, and judges them
// by the rules opm applies when it loads a bundle, with file:line on every finding.
package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/catalogbot/catalogbot/catalog"
)

// Annotation keys of metadata/annotations.yaml (operator-registry's bundle format), and the values registry+v1 requires.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"

	MediaTypeRegistryV1 = "registry+v1"
	ManifestsDir        = "manifests/"
	MetadataDir         = "metadata/"
)

// Bundle is one bundle directory as read.
type Bundle struct {
	// Annotations of metadata/annotations.yaml, and where each value is.
	Annotations   map[string]string
	AnnotationPos map[string]catalog.Position
	AnnotationsAt catalog.Position // the annotations file

	Package        string
	Channels       []string
	DefaultChannel string

	// CSV is the ClusterServiceVersion manifest; CRDs the CustomResourceDefinitions; Others every other
	// manifest, in file order.
	CSV    *Manifest
	CRDs   []*Manifest
	Others []*Manifest

	// Dependencies are the entries of metadata/dependencies.yaml (type and value), Properties those of
	// metadata/properties.yaml.
	Dependencies []Entry
	Properties   []Entry
}

// Manifest is one Kubernetes object of manifests/.
type Manifest struct {
	File       string // relative to the bundle directory
	Pos        catalog.Position
	APIVersion string
	Kind       string
	Name       string
	Value      catalog.Value

	size int // bytes of its file
}

// Entry is one {type, value} item of dependencies.yaml or properties.yaml.
type Entry struct {
	Type  string
	Value *catalog.Value
	Pos   catalog.Position
}

// Limits bound what is read of a bundle directory.
type Limits struct {
	// MaxFiles bounds the files and folders of manifests/ and metadata/, at any depth (default 1000).
	MaxFiles int
	// MaxTotalBytes bounds the bytes of every file of manifests/ and metadata/, at any depth, read or
	// not: all of them go into the bundle image (default 64 MiB).
	MaxTotalBytes int64
	// Parse bounds each file (see catalog.Limits).
	Parse catalog.Limits
	// RenderOnly leaves out the compressed-size rule (bundle.size), which gzips every file of a large bundle:
	// for callers that render the bundle and never report its findings (a template's bundle image resolved
	// from its directory).
	RenderOnly bool
}

// The default bounds of a bundle directory.
const (
	DefaultMaxFiles      = 1000
	DefaultMaxTotalBytes = 64 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	return l
}

// ErrNotABundle: the directory has neither manifests/ nor metadata/.
var ErrNotABundle = errors.New("not a bundle directory: it has neither manifests/ nor metadata/")

// Load reads the bundle directory at the root of fsys. Problems of the bundle are findings (with positions
// relative to the bundle directory), among them links (never followed, wherever they are) and a directory
// beyond the bounds; the error is for I/O failure or ErrNotABundle.
//
// Nothing is found by path: every name comes from listing its folder, and only what the listing says is a
// regular file is opened, so a link is never followed whatever fsys does with links (os.DirFS follows them,
// gitfs refuses them).
func Load(ctx context.Context, fsys fs.FS, lim Limits) (*Bundle, []catalog.Finding, error) {
	lim = lim.withDefaults()
	r := &reader{ctx: ctx, fsys: fsys, lim: lim, b: &Bundle{Annotations: map[string]string{}, AnnotationPos: map[string]catalog.Position{}}}
	top, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the bundle directory: %w", err)
	}
	var manifests, metadata fs.DirEntry
	for _, e := range top {
		switch e.Name() {
		case "manifests":
			manifests = e
		case "metadata":
			metadata = e
		default:
			r.others = append(r.others, e)
		}
	}
	if (manifests == nil || !isDirOrLink(manifests)) && (metadata == nil || !isDirOrLink(metadata)) {
		return nil, nil, ErrNotABundle
	}
	// Both folders are listed (and counted against the bounds) before anything is read.
	var lists [2][]scanned
	for i, e := range []fs.DirEntry{manifests, metadata} {
		name := [2]string{"manifests", "metadata"}[i]
		switch {
		case e == nil || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0):
			rule := [2]string{ruleNoManifests, ruleNoMetadata}[i]
			r.add(rule, catalog.Position{File: name}, "the bundle has no %s/ directory", name)
		case e.Type()&fs.ModeSymlink != 0:
			r.add(ruleNotRegular, catalog.Position{File: name}, "%s is a link; links are never followed, so the bundle has no %s/ here: put the folder itself in the bundle directory", name, name)
		default:
			list, over, err := r.scan(name)
			if err != nil {
				return nil, nil, err
			}
			if over {
				catalog.SortFindings(r.findings)
				return r.b, r.findings, nil
			}
			lists[i] = list
		}
	}
	if metadata != nil && metadata.IsDir() {
		if err := r.readMetadata(lists[1]); err != nil {
			return nil, nil, err
		}
	}
	if manifests != nil && manifests.IsDir() {
		if err := r.readManifests(lists[0]); err != nil {
			return nil, nil, err
		}
	}
	r.checkPackageProperties()
	r.checkVerdictRules()
	catalog.SortFindings(r.findings)
	return r.b, r.findings, nil
}

type reader struct {
	ctx      context.Context
	fsys     fs.FS
	lim      Limits
	b        *Bundle
	findings []catalog.Finding
	files    int           // files and folders listed
	total    int64         // bytes of the files listed
	readData []readFile    // every file read, for the compressed size
	listed   []scanned     // the regular files of manifests/ and metadata/ listed (the size counts them all)
	others   []fs.DirEntry // the entries of the bundle directory besides manifests/ and metadata/ (the size counts them)
}

// readFile is one file read, by name.
type readFile struct {
	name string
	data []byte
}

func (r *reader) add(rule string, pos catalog.Position, format string, args ...any) {
	rl := ruleByID(rule)
	r.findings = append(r.findings, catalog.Finding{Rule: rule, Severity: rl.Severity, Position: pos,
		Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: r.b.Package})
}

func isDirOrLink(e fs.DirEntry) bool { return e.IsDir() || e.Type()&fs.ModeSymlink != 0 }

// scanned is one entry directly in manifests/ or metadata/, as its folder's listing describes it.
type scanned struct {
	name string // slash path relative to the bundle directory
	dir  bool
	size int64 // of a regular file
}

// scan lists dir (manifests or metadata) and every folder below it, without following links, counting
// every file and folder against the bounds (all of them go into the bundle image, read or not). It returns
// the regular files and the folders directly in dir, in name order; links and special files are findings.
// over: a bound was passed (a finding says where), and nothing more should be read.
func (r *reader) scan(dir string) (top []scanned, over bool, err error) {
	pending := []string{dir}
	for len(pending) > 0 {
		cur := pending[0]
		pending = pending[1:]
		if err := r.ctx.Err(); err != nil {
			return nil, false, err
		}
		entries, err := fs.ReadDir(r.fsys, cur)
		if err != nil {
			return nil, false, fmt.Errorf("reading %s: %w", cur, err)
		}
		for _, e := range entries {
			name := path.Join(cur, e.Name())
			r.files++
			if r.files > r.lim.MaxFiles {
				r.add(ruleTooLarge, catalog.Position{File: name}, "manifests/ and metadata/ hold more than %d files and folders (the bound of a bundle); nothing more was read", r.lim.MaxFiles)
				return nil, true, nil
			}
			var size int64
			switch {
			case e.IsDir():
				pending = append(pending, name)
			case e.Type()&fs.ModeSymlink != 0:
				r.add(ruleNotRegular, catalog.Position{File: name}, "%s is a link; links are never followed (nor built into the bundle image)", name)
				continue
			case !e.Type().IsRegular():
				r.add(ruleNotRegular, catalog.Position{File: name}, "%s is not a regular file (a device, pipe or socket); it was not read", name)
				continue
			default:
				info, err := e.Info()
				if err != nil {
					return nil, false, fmt.Errorf("reading %s: %w", name, err)
				}
				size = info.Size()
				r.listed = append(r.listed, scanned{name: name, size: size})
				r.total += size
				if r.total > r.lim.MaxTotalBytes {
					r.add(ruleTooLarge, catalog.Position{File: name}, "manifests/ and metadata/ hold more than %d bytes (the bound of a bundle) once %s (%d bytes) is counted; nothing was read", r.lim.MaxTotalBytes, name, size)
					return nil, true, nil
				}
			}
			if cur == dir {
				top = append(top, scanned{name: name, dir: e.IsDir(), size: size})
			}
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].name < top[j].name })
	return top, false, nil
}

// read reads one regular file the listing found, of the size it gave. The file is checked again once open:
// one that became a link or another kind of file meanwhile is not read.
func (r *reader) read(f scanned) ([]byte, bool, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, false, err
	}
	fh, err := r.fsys.Open(f.name)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", f.name, err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", f.name, err)
	}
	if !info.Mode().IsRegular() || info.Size() != f.size {
		r.add(ruleNotRegular, catalog.Position{File: f.name}, "%s changed while the bundle was read (it is no longer the regular file listed); it was not read", f.name)
		return nil, false, nil
	}
	// One buffer of the listed size, and a byte more, so that a file that grew meanwhile is seen to.
	data := make([]byte, f.size+1)
	n, err := io.ReadFull(fh, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false, fmt.Errorf("reading %s: %w", f.name, err)
	}
	if int64(n) != f.size {
		r.add(ruleNotRegular, catalog.Position{File: f.name}, "%s changed while the bundle was read (%d bytes listed, %d read); it was not read", f.name, f.size, n)
		return nil, false, nil
	}
	r.readData = append(r.readData, readFile{name: f.name, data: data[:n:n]})
	return data[:n:n], true, nil
}

// readQuiet reads a file the listing found, of the size it gave, for the compressed size only: nothing is
// recorded. ok is false when the file is no longer the regular file listed.
func (r *reader) readQuiet(f scanned) ([]byte, bool, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, false, err
	}
	fh, err := r.fsys.Open(f.name)
	if err != nil {
		return nil, false, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, false, err
	}
	if !info.Mode().IsRegular() || info.Size() != f.size {
		return nil, false, nil
	}
	data := make([]byte, f.size+1)
	n, err := io.ReadFull(fh, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false, err
	}
	return data[:n:n], int64(n) == f.size, nil
}

// readManifests reads every file of manifests/ (one object each, as opm reads them).
func (r *reader) readManifests(list []scanned) error {
	// Read every file first, in order (bounds and findings as one by one), then parse them side by side.
	files := make([]manifestFile, 0, len(list))
	for _, e := range list {
		base := path.Base(e.name)
		switch {
		case e.dir:
			r.add(ruleManifestsSubdir, catalog.Position{File: e.name}, "manifests/ holds a directory %s; opm reads only the files of manifests/ itself", base)
			continue
		case strings.HasPrefix(base, "."):
			// opm skips it; operator-framework/api's loader (operator-sdk bundle validate) refuses the bundle.
			r.add(ruleManifestsHidden, catalog.Position{File: e.name}, "manifests/ holds the hidden file %s, which opm skips and operator-sdk bundle validate refuses", base)
			continue
		}
		data, ok, err := r.read(e)
		if err != nil {
			return err
		}
		files = append(files, manifestFile{name: e.name, data: data, ok: ok})
	}
	r.parseAll(files)
	var csvs []*Manifest
	for _, f := range files {
		name, docs, ok := f.name, f.docs, f.ok
		r.findings = append(r.findings, f.findings...)
		if !ok || len(docs) == 0 {
			if ok {
				r.add(ruleManifestEmpty, catalog.Position{File: name, Line: 1}, "%s holds no object", name)
			}
			continue
		}
		if len(docs) > 1 {
			r.add(ruleManifestMulti, docs[1].Pos, "%s holds %d objects; opm reads only the first of each manifest file", name, len(docs))
		}
		m := &Manifest{File: name, Pos: docs[0].Pos, Value: docs[0].Value, size: len(f.data)}
		m.APIVersion = str(m.Value.Get("apiVersion"))
		m.Kind = str(m.Value.Get("kind"))
		if md := m.Value.Get("metadata"); md != nil {
			m.Name = str(md.Get("name"))
		}
		switch {
		case m.Kind == "":
			// opm's decoder needs a kind; an object without apiVersion passes it (the community catalog
			// holds such ClusterRoles).
			r.add(ruleManifestNoKind, m.Pos, "%s has no kind; it is not a Kubernetes object", name)
			continue
		case !supportedKind(m.Kind):
			// opm renders it all the same (an olm.bundle.object), and OLM refuses to install it.
			r.add(ruleUnsupportedKind, m.Pos, "kind %s is not one a registry+v1 bundle may ship", m.Kind)
		}
		if m.Name == "" {
			r.add(ruleManifestNoName, m.Pos, "%s %s has no metadata.name", m.Kind, name)
		}
		switch m.Kind {
		case "ClusterServiceVersion":
			csvs = append(csvs, m)
		case "CustomResourceDefinition":
			if m.APIVersion != "apiextensions.k8s.io/v1" && m.APIVersion != "apiextensions.k8s.io/v1beta1" {
				r.add(ruleCRDVersion, m.Pos, "CRD apiVersion %q is not apiextensions.k8s.io/v1 or v1beta1", m.APIVersion)
			}
			r.b.CRDs = append(r.b.CRDs, m)
		default:
			r.b.Others = append(r.b.Others, m)
		}
	}
	switch len(csvs) {
	case 0:
		r.add(ruleCSVCount, catalog.Position{File: "manifests"}, "manifests/ holds no ClusterServiceVersion; a bundle has exactly one")
	case 1:
		r.b.CSV = csvs[0]
		r.checkOwnedCRDs()
		r.checkCSV()
		r.checkBundleObjects()
	default:
		for _, c := range csvs[1:] {
			r.add(ruleCSVCount, c.Pos, "a second ClusterServiceVersion (%s); a bundle has exactly one, the first is %s", c.Name, csvs[0].File)
		}
		r.b.CSV = csvs[0]
		r.checkCSV()
	}
	return nil
}

// manifestFile is one file of manifests/: its bytes as read, then its documents and syntax findings.
type manifestFile struct {
	name     string
	data     []byte
	ok       bool // read (a regular file)
	docs     []catalog.Doc
	findings []catalog.Finding
}

// parallelBytes: below this many bytes in all, the files of a bundle are parsed one after the other: starting
// goroutines would cost more than it saves.
const parallelBytes = 64 << 10

// parseAll parses the files that were read. Parsing keeps no state between files, so the outcome is the same
// as one after the other.
func (r *reader) parseAll(files []manifestFile) {
	total := 0
	for i := range files {
		total += len(files[i].data)
	}
	eachInParallel(len(files), total, func(i int) int { return len(files[i].data) }, func(_, i int) {
		if f := &files[i]; f.ok {
			// The buffer is the file's own, read for it and kept (readData) until the bundle is judged.
			f.docs, f.findings = catalog.ParseDocumentsShared(f.name, f.data, r.lim.Parse)
		}
	})
}

// eachInParallel calls do(worker, i) for every i below n, largest size(i) first, on as many goroutines as the
// process may run at once (worker numbers them from 0), or on this one when total is small.
func eachInParallel(n, total int, size func(int) int, do func(worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 || total < parallelBytes {
		for i := range n {
			do(0, i)
		}
		return
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return size(order[a]) > size(order[b]) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				do(w, order[i])
			}
		})
	}
	wg.Wait()
}

// checkOwnedCRDs: every CRD the CSV owns ships in the bundle (with the version it names).
func (r *reader) checkOwnedCRDs() {
	shipped := map[string]map[string]bool{}
	for _, c := range r.b.CRDs {
		versions := map[string]bool{}
		spec := c.Value.Get("spec")
		if spec != nil {
			if vs := spec.Get("versions"); vs != nil {
				for _, v := range vs.Items() {
					versions[str(v.Get("name"))] = true
				}
			}
			if v := spec.Get("version"); v != nil { // v1beta1
				versions[str(v)] = true
			}
		}
		shipped[c.Name] = versions
	}
	csv := r.b.CSV
	owned := path2(csv.Value, "spec", "customresourcedefinitions", "owned")
	if owned == nil {
		return
	}
	for _, o := range owned.Items() {
		name, version := str(o.Get("name")), str(o.Get("version"))
		versions, ok := shipped[name]
		switch {
		case name == "":
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "an owned CRD of the CSV has no name")
		case !ok:
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "the CSV owns CRD %s, which the bundle does not ship", name)
		case version != "" && !versions[version]:
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "the CSV owns CRD %s at version %s, which the shipped CRD does not serve", name, version)
		}
	}
}

func str(v *catalog.Value) string {
	if v == nil || v.Kind != catalog.KindString {
		return ""
	}
	return v.Str()
}

func path2(v catalog.Value, keys ...string) *catalog.Value {
	cur := &v
	for _, k := range keys {
		if cur == nil || cur.Kind != catalog.KindObject {
			return nil
		}
		cur = cur.Get(k)
	}
	return cur
}

// supportedKind: the kinds a registry+v1 bundle may ship (operator-registry's list of supported resources).
func supportedKind(kind string) bool {
	switch kind {
	case "ClusterServiceVersion", "CustomResourceDefinition", "Secret", "ClusterRole", "ClusterRoleBinding",
		"ConfigMap", "ServiceAccount", "Service", "Role", "RoleBinding", "PrometheusRule", "ServiceMonitor",
		"PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart",
		"ConsoleCLIDownload", "ConsoleLink", "ConsolePlugin", "NetworkPolicy", "PodMonitor":
		return true
	}
	return false
}
