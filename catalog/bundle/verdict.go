package bundle

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"

	blang "github.com/blang/semver/v4"
	"github.com/klauspost/compress/s2"

	"github.com/catalogbot/catalogbot/catalog"
)

// A bundle's verdict is the reference's (issue 29): an error exactly where opm render fails or
// operator-sdk's default validators (operator-framework/api: CSV, CRD and bundle validators) report one.
// operator-registry's own format and content checks (what `opm alpha bundle validate` adds) are warnings
// unless the bundle root asks strict: true; catalogbot's safety rules (links, bounds, ambiguous metadata)
// and what would break the catalog the bundle joins (olm.skipRange) are always errors.

// strictRules are raised to errors by Strict.
var strictRules = map[string]bool{
	ruleAnnotationMissing: true, ruleAnnotationNotString: true, ruleAnnotationEmpty: true, ruleAnnotationPath: true,
	ruleMediaType: true, ruleDependencyType: true, ruleMetadataShape: true, ruleManifestMulti: true,
	ruleManifestNoName: true, ruleUnsupportedKind: true, ruleCSVVersion: true, ruleCSVInstallRepeat: true,
	ruleDependencyValue: true,
}

// Strict raises the warnings of operator-registry's format and content checks to errors, in place: what a
// bundle root with strict: true (or bundle validate --strict) asks.
func Strict(findings []catalog.Finding) {
	for i := range findings {
		if strictRules[findings[i].Rule] {
			findings[i].Severity = catalog.SeverityError
		}
	}
}

// renderStoppers are the rules after which opm render gives no blob (or catalogbot refuses to make one:
// links, bounds, ambiguous metadata).
var renderStoppers = map[string]bool{
	ruleNoManifests: true, ruleNoMetadata: true, ruleNoAnnotations: true, ruleOwnedCRDMissing: true,
	ruleNotRegular: true, ruleTooLarge: true, ruleMetadataAmbiguous: true,
}

// NotRenderable says why no olm.bundle blob is made of the bundle (nil when one is): no CSV, or a finding
// opm render fails on (or that catalogbot never renders past). Every other finding, errors included, leaves
// the blob as opm makes it.
func NotRenderable(b *Bundle, findings []catalog.Finding) *catalog.Finding {
	for i := range findings {
		if renderStoppers[findings[i].Rule] && findings[i].Severity == catalog.SeverityError {
			return &findings[i]
		}
	}
	if b == nil || b.CSV == nil {
		return &catalog.Finding{Rule: ruleCSVCount, Severity: catalog.SeverityError, Position: catalog.Position{File: "manifests"}, Message: "the bundle has no ClusterServiceVersion"}
	}
	return nil
}

// More rules of the reference validators (operator-framework/api v0.42, as operator-sdk and opm v1.69 use it).
const (
	ruleCRDStorage      = "bundle.crd-storage-version"
	ruleCRDInvalid      = "bundle.crd-invalid"
	ruleRelatedImage    = "bundle.related-image"
	ruleReleaseName     = "bundle.csv-release-name"
	ruleBundleSize      = "bundle.size"
	ruleDependencyValue = "bundle.dependency-value"
)

func verdictRules() []catalog.Rule {
	const api = "operator-sdk bundle validate (operator-framework/api bundle and CRD validators)"
	return []catalog.Rule{
		{ID: ruleCRDStorage, Severity: catalog.SeverityError, Source: api, Summary: "a CRD lists no versions, or not exactly one of them has storage: true", Hint: "mark exactly one version storage: true"},
		{ID: ruleCRDInvalid, Severity: catalog.SeverityError, Source: api, Summary: "a CRD's metadata.name is not <spec.names.plural>.<spec.group>, or its spec.scope is neither Cluster nor Namespaced (the API server's CRD validation)", Hint: "name the CRD <plural>.<group> and set scope: Namespaced or Cluster"},
		{ID: ruleRelatedImage, Severity: catalog.SeverityError, Source: api, Summary: "an entry of the CSV's spec.relatedImages has an empty or invalid image pull spec (upper case in the repository, say)", Hint: "write the image as registry/repository[:tag][@sha256:digest], repository in lower case"},
		{ID: ruleReleaseName, Severity: catalog.SeverityError, Source: api, Summary: "spec.release is set but the CSV's name is not <package>-v<version>-<release>, or spec.release is not dot-separated pre-release identifiers", Hint: "name the CSV <package>-v<version>-<release>, e.g. etcd-v1.0.0-2"},
		{ID: ruleBundleSize, Severity: catalog.SeverityError, Source: api, Summary: "the bundle's files, gzip-compressed and base64-encoded, exceed 1 MiB (OLM's bound; a warning above 85%); counted as operator-sdk counts it, over every file of the bundle directory (manifests/, metadata/ and anything else there, hidden files too; links are not followed)", Hint: "shrink what the bundle ships: a smaller icon, fewer or smaller CRD descriptions"},
		{ID: ruleDependencyValue, Severity: catalog.SeverityWarning, Source: "operator-registry bundle validation (opm alpha bundle validate)", Summary: "a dependency's value is not what its type needs (olm.gvk without group, version or kind; olm.package without name or with a version range that does not parse; olm.label without label; olm.constraint without cel, all, any or not)", Hint: "complete the dependency, e.g. {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}"},
	}
}

// maxBundleSize is OLM's bound on a bundle's compressed size (operator-framework/api's bundle validator).
const maxBundleSize = 1 << 20

// checkVerdictRules applies the rules of verdictRules that need the CSV, the CRDs or the bytes read.
func (r *reader) checkVerdictRules() {
	r.checkCRDStorage()
	if r.b.CSV != nil {
		r.checkRelatedImages()
		r.checkRelease()
	}
	if !r.lim.RenderOnly {
		r.checkSize()
	}
	r.checkDependencyValues()
}

func (r *reader) checkCRDStorage() {
	for _, c := range r.b.CRDs {
		spec := c.Value.Get("spec")
		if spec == nil {
			continue
		}
		if sc := spec.Get("scope"); sc == nil || (str(sc) != "Cluster" && str(sc) != "Namespaced") {
			r.add(ruleCRDInvalid, spec.Pos(c.File), "CRD %s: spec.scope is %q; it must be Cluster or Namespaced", c.Name, str(sc))
		}
		plural, group := str(path2(*spec, "names", "plural")), str(spec.Get("group"))
		if want := plural + "." + group; plural != "" && group != "" && c.Name != want {
			r.add(ruleCRDInvalid, c.Pos, "CRD %s: metadata.name must be spec.names.plural+\".\"+spec.group, %s", c.Name, want)
		}
		vs := spec.Get("versions")
		if vs == nil || vs.Len() == 0 {
			if c.APIVersion == "apiextensions.k8s.io/v1" {
				r.add(ruleCRDStorage, spec.Pos(c.File), "CRD %s lists no versions", c.Name)
			}
			continue
		}
		storage := 0
		for _, v := range vs.Items() {
			if s := v.Get("storage"); s != nil && s.Bool() {
				storage++
			}
		}
		if storage != 1 {
			r.add(ruleCRDStorage, vs.Pos(c.File), "CRD %s has %d versions marked storage: true; exactly one must be", c.Name, storage)
		}
	}
}

func (r *reader) checkRelatedImages() {
	m := r.b.CSV
	list := path2(m.Value, "spec", "relatedImages")
	if list == nil {
		return
	}
	for i, it := range list.Items() {
		img := it.Get("image")
		pos := it.Pos(m.File)
		if img != nil {
			pos = img.Pos(m.File)
		}
		switch s := str(img); {
		case s == "":
			r.add(ruleRelatedImage, pos, "spec.relatedImages[%d] has an empty image", i)
		default:
			if err := catalog.ParseImageReference(s); err != nil {
				r.add(ruleRelatedImage, pos, "spec.relatedImages[%d] has an invalid image pull spec %q: %v", i, s, err)
			}
		}
	}
}

func (r *reader) checkRelease() {
	m := r.b.CSV
	rel := path2(m.Value, "spec", "release")
	if rel == nil || rel.Kind == catalog.KindNull {
		return
	}
	s := str(rel)
	if rel.Kind != catalog.KindString {
		r.add(ruleReleaseName, rel.Pos(m.File), "spec.release is %s, not a string", rel.Kind)
		return
	}
	if s == "" {
		return
	}
	var segs []string
	for _, seg := range strings.Split(s, ".") {
		pr, err := blang.NewPRVersion(seg)
		if err != nil {
			r.add(ruleReleaseName, rel.Pos(m.File), "spec.release %q is not dot-separated pre-release identifiers: %v", s, err)
			return
		}
		segs = append(segs, pr.String())
	}
	version := str(path2(m.Value, "spec", "version"))
	if v, err := blang.Parse(version); err == nil {
		version = v.String()
	}
	want := fmt.Sprintf("%s-v%s-%s", r.b.Package, version, strings.Join(segs, "."))
	if m.Name != want {
		r.add(ruleReleaseName, rel.Pos(m.File), "spec.release is %q, so the CSV must be named %q (<package>-v<version>-<release>), not %q", s, want, m.Name)
	}
}

// checkSize: the compressed size as operator-framework/api counts it (operator-sdk bundle validate, the
// bundle validator's size check): every regular file below the bundle directory, at any depth and hidden or
// not (manifests/, metadata/, and whatever else the directory holds: tests/, a Dockerfile, ...), each
// gzip-compressed, then base64-encoded. Links are never followed (the loader already refuses those in
// manifests/ and metadata/). Only a bundle whose files could reach 85% of the bound is compressed; the files
// not read for the bundle itself are read only then, within the bundle's bounds.
func (r *reader) checkSize() {
	read := make(map[string]bool, len(r.readData))
	var raw int64
	for _, f := range r.readData {
		read[f.name] = true
		raw += int64(len(f.data))
	}
	var rest []scanned
	for _, f := range r.listed {
		if !read[f.name] {
			rest = append(rest, f)
			raw += f.size
		}
	}
	over := ""
	for _, e := range r.others {
		if over != "" {
			break
		}
		if !e.IsDir() && !e.Type().IsRegular() {
			continue // a link is never followed (fs.WalkDir would follow one at its root)
		}
		err := fs.WalkDir(r.fsys, e.Name(), func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				over = fmt.Sprintf("%s could not be listed (%v)", name, err)
				return fs.SkipAll
			}
			if err := r.ctx.Err(); err != nil {
				return err
			}
			r.files++
			if r.files > r.lim.MaxFiles {
				over = fmt.Sprintf("the bundle directory holds more than %d files and folders", r.lim.MaxFiles)
				return fs.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil // a folder is walked; a link is never followed
			}
			info, err := d.Info()
			if err != nil {
				over = fmt.Sprintf("%s could not be listed (%v)", name, err)
				return fs.SkipAll
			}
			raw += info.Size()
			if raw > r.lim.MaxTotalBytes {
				over = fmt.Sprintf("the bundle directory holds more than %d bytes", r.lim.MaxTotalBytes)
				return fs.SkipAll
			}
			rest = append(rest, scanned{name: name, size: info.Size()})
			return nil
		})
		if err != nil && over == "" {
			over = err.Error()
		}
	}
	pos := catalog.Position{File: "manifests"}
	if r.b.CSV != nil {
		pos = r.b.CSV.Pos
	}
	rl := ruleByID(ruleBundleSize)
	if over != "" {
		// Could not verify: neither a pass nor a failure.
		r.findings = append(r.findings, catalog.Finding{Rule: ruleBundleSize, Severity: catalog.SeverityWarning, Position: pos, Package: r.b.Package, Hint: rl.Hint,
			Message: fmt.Sprintf("the bundle's compressed size was not checked: %s (operator-sdk counts every file of the bundle directory)", over)})
		return
	}
	if raw*4/3+1024 < maxBundleSize*85/100 {
		return
	}
	files := make([]readFile, 0, len(r.readData)+len(rest))
	files = append(files, r.readData...)
	for _, f := range rest {
		data, ok, err := r.readQuiet(f)
		if err != nil || !ok {
			msg := "it changed while it was read"
			if err != nil {
				msg = err.Error()
			}
			r.findings = append(r.findings, catalog.Finding{Rule: ruleBundleSize, Severity: catalog.SeverityWarning, Position: pos, Package: r.b.Package, Hint: rl.Hint,
				Message: fmt.Sprintf("the bundle's compressed size was not checked: %s could not be read (%s)", f.name, msg)})
			return
		}
		files = append(files, readFile{name: f.name, data: data})
	}
	// First a quick estimate (see screenSize): well below the warning line, the exact size cannot reach it.
	if screenSize(files) < screenLine {
		return
	}
	total, largest := compressedSize(files, gzip.DefaultCompression)
	biggest := "the largest compressed is " + files[largest].name
	switch {
	case total > maxBundleSize:
		r.add(ruleBundleSize, pos, "the bundle is %d bytes compressed (gzip, base64, every file of the bundle directory), over OLM's bound of %d bytes (%d bytes uncompressed; %s)", total, maxBundleSize, raw, biggest)
	case total > maxBundleSize*85/100:
		r.findings = append(r.findings, catalog.Finding{Rule: ruleBundleSize, Severity: catalog.SeverityWarning, Position: pos, Package: r.b.Package, Hint: rl.Hint,
			Message: fmt.Sprintf("the bundle is %d bytes compressed (gzip, base64, every file of the bundle directory), near OLM's bound of %d bytes (%s)", total, maxBundleSize, biggest)})
	}
}

// compressedSize is the size of the files gzip-compressed at level, then base64-encoded, each on its own,
// side by side; largest is the index of the file that compresses the largest.
func compressedSize(files []readFile, level int) (n, largest int) {
	sizes := make([]int, len(files))
	total := 0
	for _, f := range files {
		total += len(f.data)
	}
	// One compressor per worker, reset for each file: a compressor's state is large to allocate.
	writers := make([]*gzip.Writer, runtime.GOMAXPROCS(0))
	eachInParallel(len(files), total, func(i int) int { return len(files[i].data) }, func(w, i int) {
		var buf countWriter
		enc := base64.NewEncoder(base64.StdEncoding, &buf)
		if writers[w] == nil {
			writers[w], _ = gzip.NewWriterLevel(enc, level)
		} else {
			writers[w].Reset(enc)
		}
		zw := writers[w]
		_, _ = io.Copy(zw, bytes.NewReader(files[i].data))
		_ = zw.Close()
		_ = enc.Close()
		sizes[i] = buf.n
	})
	for i, s := range sizes {
		n += s
		if s > sizes[largest] {
			largest = i
		}
	}
	return n, largest
}

// screenLine is the estimate below which a bundle's exact compressed size is not computed: 80% of the
// warning line, itself 85% of the bound.
const screenLine = maxBundleSize * 85 / 100 * 80 / 100

// screenSize estimates what compressedSize counts at gzip's default level, about ten times faster: each file is
// cut into pieces of deflate's window (32 KiB) and each piece compressed on its own with S2 (klauspost/compress:
// LZ77 with one hash probe and no entropy coding), then the gzip header and trailer (18 bytes), base64 (4 bytes
// for every 3) and screenSlack are counted. Within a piece S2 finds no match deflate's window could not, and it
// writes every literal as a whole byte, so on text it counts far more than deflate writes: on the community's
// bundles the exact count is 0.55–0.62 of the estimate. Where S2 does best against deflate (incompressible
// bytes, long runs, periods within and beyond a piece, random text over a few letters; see
// TestSizeScreenBoundsTheExactCount) the exact count reaches 1.04 of it, against the 1/0.8 = 1.25 that
// screenLine leaves. (Before, klauspost's fastest deflate level: 0.79–0.88 and 1.13, at ten times the cost.)
func screenSize(files []readFile) int {
	total := 0
	for _, f := range files {
		total += len(f.data)
	}
	sizes := make([]int, len(files))
	// One output buffer per worker: S2 writes a piece into it whole.
	bufs := make([][]byte, runtime.GOMAXPROCS(0))
	eachInParallel(len(files), total, func(i int) int { return len(files[i].data) }, func(w, i int) {
		if bufs[w] == nil {
			bufs[w] = make([]byte, s2.MaxEncodedLen(screenPiece))
		}
		n := 0
		for data := files[i].data; len(data) > 0; {
			k := min(len(data), screenPiece)
			n += len(s2.Encode(bufs[w], data[:k]))
			data = data[k:]
		}
		sizes[i] = base64.StdEncoding.EncodedLen(n+gzipFraming) + len(files[i].data)/screenSlack
	})
	n := 0
	for _, s := range sizes {
		n += s
	}
	return n
}

// screenPiece is deflate's window: what S2 compresses at once, so it never matches further back than deflate can.
const screenPiece = 32 << 10

// screenSlack: one byte for every screenSlack bytes of input is added to the estimate for what deflate spends
// where S2 spends next to nothing, a long match (S2 extends one with a repeat code of a few bytes, deflate
// writes a length and distance code for every 258 bytes of it: with the fixed codes 26 bits).
const screenSlack = 64

// gzipFraming is what gzip adds around the deflated bytes when no name, comment or extra field is set, as
// compress/gzip writes it: a 10-byte header and an 8-byte trailer (CRC-32 and length).
const gzipFraming = 18

type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

func (r *reader) checkDependencyValues() {
	for _, d := range r.b.Dependencies {
		v := d.Value
		need := func(keys ...string) {
			for _, k := range keys {
				if s := lastString(v, k); s == nil || *s == "" {
					r.add(ruleDependencyValue, d.Pos, "the %s dependency has no %s", d.Type, k)
					return
				}
			}
		}
		switch d.Type {
		case "olm.gvk":
			need("group", "version", "kind")
		case "olm.package":
			need("packageName", "version")
			if s := lastString(v, "version"); s != nil && *s != "" {
				if _, err := catalog.ParseSkipRange(*s); err != nil {
					r.add(ruleDependencyValue, d.Pos, "the olm.package dependency's version range %q does not parse: %v", *s, err)
				}
			}
		case "olm.label":
			need("label")
		case "olm.constraint":
			found := false
			for _, k := range []string{"cel", "all", "any", "not"} {
				if len(fields(v, k)) > 0 {
					found = true
				}
			}
			if !found {
				r.add(ruleDependencyValue, d.Pos, "the olm.constraint dependency has none of cel, all, any or not")
			} else if cel := fields(v, "cel"); len(cel) > 0 {
				if rule := lastString(&cel[len(cel)-1].Value, "rule"); rule == nil || strings.TrimSpace(*rule) == "" {
					r.add(ruleDependencyValue, d.Pos, "the olm.constraint dependency's cel has no rule")
				}
			}
		}
	}
}
