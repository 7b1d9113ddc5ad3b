package template

import (
	"bytes"
	"io"
	"io/fs"
)

// maxMemoFile is the largest file a memoFS keeps; larger ones are read from the file system each time (the
// readers bound them anyway).
const maxMemoFile = 32 << 20

// memoFS keeps the regular files read through it, so that reading one bundle directory twice (to load the
// bundle, then to build its image for the digest) costs the underlying file system one read. It lives as
// long as one directory is being indexed.
type memoFS struct {
	fsys  fs.FS
	files map[string]*memoEntry
}

type memoEntry struct {
	data []byte
	info fs.FileInfo
}

func newMemoFS(fsys fs.FS) *memoFS { return &memoFS{fsys: fsys, files: map[string]*memoEntry{}} }

// Open implements fs.FS.
func (m *memoFS) Open(name string) (fs.File, error) {
	if e, ok := m.files[name]; ok {
		return &memoFile{entry: e, r: bytes.NewReader(e.data)}, nil
	}
	f, err := m.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxMemoFile {
		return f, nil // directories (their ReadDir goes to the file system), and files too large to keep
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMemoFile+1))
	f.Close()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	e := &memoEntry{data: data, info: info}
	m.files[name] = e
	return &memoFile{entry: e, r: bytes.NewReader(data)}, nil
}

// ReadDir implements fs.ReadDirFS (entries as the file system lists them: links stay links).
func (m *memoFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(m.fsys, name) }

// Stat implements fs.StatFS.
func (m *memoFS) Stat(name string) (fs.FileInfo, error) {
	if e, ok := m.files[name]; ok {
		return e.info, nil
	}
	return fs.Stat(m.fsys, name)
}

// ReadLink implements fs.ReadLinkFS when the file system does.
func (m *memoFS) ReadLink(name string) (string, error) { return fs.ReadLink(m.fsys, name) }

// Lstat implements fs.ReadLinkFS when the file system does.
func (m *memoFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(m.fsys, name) }

type memoFile struct {
	entry *memoEntry
	r     *bytes.Reader
}

func (f *memoFile) Stat() (fs.FileInfo, error) { return f.entry.info, nil }
func (f *memoFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memoFile) Close() error               { return nil }

func (f *memoFile) Seek(offset int64, whence int) (int64, error) { return f.r.Seek(offset, whence) }
func (f *memoFile) ReadAt(p []byte, off int64) (int, error)      { return f.r.ReadAt(p, off) }

var (
	_ fs.ReadDirFS  = (*memoFS)(nil)
	_ fs.StatFS     = (*memoFS)(nil)
	_ fs.ReadLinkFS = (*memoFS)(nil)
)
