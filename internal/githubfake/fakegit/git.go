package fakegit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Repo is a bare git repository on disk (Dir), written and read with the git command itself, so what the
// simulator creates is what a clone fetches afterwards.
type Repo struct {
	Dir string
}

// Git runs git on the repository's bare directory.
func (r Repo) Git(stdin []byte, env []string, args ...string) (string, error) {
	if r.Dir == "" {
		return "", fmt.Errorf("the repository has no git directory")
	}
	out, stderr, err := r.run(stdin, env, args)
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(out), nil
}

// run runs git on the repository's bare directory and returns its output, its standard error and how it
// ended.
func (r Repo) run(stdin []byte, env, args []string) (out, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", r.Dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.Dir)
	cmd.Env = append(cmd.Env, env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// ObjectType is the type of the object sha names (blob, tree, commit, tag); "" when there is none.
func (r Repo) ObjectType(sha string) string {
	t, err := r.Git(nil, nil, "cat-file", "-t", sha)
	if err != nil {
		return ""
	}
	return t
}

// UserAuthor is the git environment of a commit authored by a GitHub user (their noreply address) at date.
func UserAuthor(login, date string) []string {
	return []string{"GIT_AUTHOR_NAME=" + login, "GIT_AUTHOR_EMAIL=" + login + "@users.noreply.github.com", "GIT_AUTHOR_DATE=" + date}
}

// GitHubCommitter is the git environment of a commit committed by GitHub at date.
func GitHubCommitter(date string) []string {
	return []string{"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com", "GIT_COMMITTER_DATE=" + date}
}

// ApplyCommit applies the change from parent to c onto onto's tree and returns the new tree.
func (r Repo) ApplyCommit(onto, parent, c string) (tree string, conflict bool, err error) {
	idx, err := os.CreateTemp("", "githubfake-index-")
	if err != nil {
		return "", false, err
	}
	idx.Close()
	os.Remove(idx.Name())
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	if _, err := r.Git(nil, env, "read-tree", onto); err != nil {
		return "", false, err
	}
	patch, err := r.Git(nil, nil, "diff-tree", "-p", "--binary", "--full-index", parent, c)
	if err != nil {
		return "", false, err
	}
	if patch != "" {
		if _, err := r.Git([]byte(patch+"\n"), env, "apply", "--cached", "-3"); err != nil {
			return "", true, nil
		}
	}
	tree, err = r.Git(nil, env, "write-tree")
	return tree, false, err
}
