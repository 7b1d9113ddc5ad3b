package change

import (
	"github.com/catalogbot/catalogbot/catalog/load"
	"io/fs"
	"path"
)

// onlyFiles shows a tree with just the given files (slash paths), every
// directory on the way to them, and every .indexignore file, so that the
// catalog loader reads those files and applies the same ignore rules it
// applies to the whole tree.
func onlyFiles(fsys fs.FS, files map[string]bool) fs.FS {
	dirs := map[string]bool{".": true}
	for f := range files {
		for d := path.Dir(f); ; d = path.Dir(d) {
			dirs[d] = true
			if d == "." {
				break
			}
		}
	}
	return &filteredFS{fsys: fsys, files: files, dirs: dirs}
}

type filteredFS struct {
	fsys  fs.FS
	files map[string]bool
	dirs  map[string]bool
}

func (f *filteredFS) visible(name string, isDir bool) bool {
	if isDir {
		return f.dirs[name]
	}
	return f.files[name] || path.Base(name) == ".indexignore"
}

func (f *filteredFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) || !(f.dirs[name] || f.visible(name, false)) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f.fsys.Open(name)
}

func (f *filteredFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) || !(f.dirs[name] || f.visible(name, false)) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(f.fsys, name)
}

func (f *filteredFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !f.dirs[name] {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	all, err := fs.ReadDir(f.fsys, name)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, e := range all {
		if f.visible(path.Join(name, e.Name()), e.IsDir()) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ContentKey passes the tree's content keys through for visible files.
func (f *filteredFS) ContentKey(name string) (string, bool) {
	k, ok := f.fsys.(load.ContentKeyer)
	if !ok || !f.visible(name, false) {
		return "", false
	}
	return k.ContentKey(name)
}

func (f *filteredFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) || !f.visible(name, false) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadFile(f.fsys, name)
}

// exceptFiles shows a tree without the given files (slash paths); everything else reads as in fsys.
func exceptFiles(fsys fs.FS, hidden map[string]bool) fs.FS {
	return &hidingFS{fsys: fsys, hidden: hidden}
}

type hidingFS struct {
	fsys   fs.FS
	hidden map[string]bool
}

func (h *hidingFS) gone(name string) error {
	return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (h *hidingFS) Open(name string) (fs.File, error) {
	if h.hidden[name] {
		return nil, h.gone(name)
	}
	return h.fsys.Open(name)
}

func (h *hidingFS) Stat(name string) (fs.FileInfo, error) {
	if h.hidden[name] {
		return nil, h.gone(name)
	}
	return fs.Stat(h.fsys, name)
}

func (h *hidingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	all, err := fs.ReadDir(h.fsys, name)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, e := range all {
		if !h.hidden[path.Join(name, e.Name())] {
			out = append(out, e)
		}
	}
	return out, nil
}

func (h *hidingFS) ReadFile(name string) ([]byte, error) {
	if h.hidden[name] {
		return nil, h.gone(name)
	}
	return fs.ReadFile(h.fsys, name)
}

// ContentKey passes the tree's content keys through for files still shown.
func (h *hidingFS) ContentKey(name string) (string, bool) {
	k, ok := h.fsys.(load.ContentKeyer)
	if !ok || h.hidden[name] {
		return "", false
	}
	return k.ContentKey(name)
}
