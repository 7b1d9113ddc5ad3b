package registry

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"
)

// FuzzTreeApply: any bytes as one or two layers give a tree within the bounds, or an error; never a panic. What
// a tree holds is only under manifests/ and metadata/, and its fs.FS passes testing/fstest.
func FuzzTreeApply(f *testing.F) {
	tarOf := func(entries ...entry) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
			switch {
			case e.dir:
				h.Typeflag, h.Size = tar.TypeDir, 0
			case e.link != "":
				h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
			}
			tw.WriteHeader(h)
			if h.Typeflag == tar.TypeReg {
				tw.Write([]byte(e.body))
			}
		}
		tw.Close()
		return buf.Bytes()
	}
	f.Add(tarOf(entry{name: "manifests/csv.yaml", body: "kind: x"}, entry{name: "metadata/annotations.yaml", body: "a: b"}), tarOf(entry{name: "manifests/.wh.csv.yaml"}))
	f.Add(tarOf(entry{name: "manifests/a/b/c", body: "deep"}, entry{name: "x", body: "y"}), tarOf(entry{name: "manifests/a", link: "/etc"}, entry{name: ".wh..wh..opq"}))
	f.Add(tarOf(entry{name: "metadata", dir: true}, entry{name: "../metadata/x", body: "1"}), tarOf(entry{name: "metadata/.wh..wh..opq"}, entry{name: "metadata/x/y", body: "2"}))
	// Found by the fuzzer: a file replaced by a directory two levels up (the tree lost metadata/x), and a name
	// that is not UTF-8.
	f.Add(tarOf(entry{name: "metadata", body: ""}, entry{name: "metadata/x/y", body: "1"}), []byte{})
	f.Add(tarOf(entry{name: "manifests/a\xff", body: "1"}), []byte{})
	f.Fuzz(func(t *testing.T, layer1, layer2 []byte) {
		const maxFiles = 20
		tr := newTree(maxFiles, "manifests", "metadata")
		for _, l := range [][]byte{layer1, layer2} {
			r := &boundedReader{r: bytes.NewReader(l), left: 1 << 16}
			if err := tr.apply(r); err != nil {
				if errors.Is(err, ErrLimit) {
					return
				}
				continue // not a tar stream: Bundle refuses the image; the tree is not used
			}
		}
		files := 0
		var expected []string
		for p, n := range tr.nodes {
			if !tr.kept(p) {
				t.Fatalf("the tree holds %q, outside manifests/ and metadata/", p)
			}
			if !fs.ValidPath(p) {
				t.Fatalf("the tree holds %q, not a valid fs path", p)
			}
			if n.kind != nodeDir {
				files++
				expected = append(expected, p)
			}
		}
		if files > maxFiles || len(tr.nodes) > 2*maxFiles {
			t.Fatalf("%d files, %d entries: beyond the bounds", files, len(tr.nodes))
		}
		fsys := newMemFS(tr, time.Time{})
		if len(expected) == 0 {
			// fstest.TestFS takes no expected file as "the FS is empty"; directories alone are walked.
			if err := fs.WalkDir(fsys, ".", func(string, fs.DirEntry, error) error { return nil }); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := fstest.TestFS(fsys, expected...); err != nil {
			t.Fatal(err)
		}
	})
}
