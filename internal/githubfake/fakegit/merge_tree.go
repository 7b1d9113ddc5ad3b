package fakegit

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Merged trees for the merge queue's groups, computed with git itself.

// Exit runs git on the bare directory and returns its output and exit code (a non-zero code is no error).
func (r Repo) Exit(env []string, args ...string) (string, int, error) {
	out, stderr, err := r.run(nil, env, args)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, ee.ExitCode(), nil
	}
	if err != nil {
		return "", -1, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return out, 0, nil
}

// MergedTree is the tree of merging theirs into ours; conflict when it does not apply.
func (r Repo) MergedTree(ours, theirs string) (tree string, conflict bool, err error) {
	out, code, err := r.Exit(nil, "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	switch {
	case err != nil:
		return "", false, err
	case code == 1:
		return "", true, nil
	case code != 0:
		return "", false, fmt.Errorf("git merge-tree %s %s: exit code %d", ours, theirs, code)
	}
	tree, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
	return tree, false, nil
}
