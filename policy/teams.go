package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// ErrUnknownTeam is wrapped by TeamsFile.TeamMembers for a team the file does not list.
var ErrUnknownTeam = errors.New("team not listed")

// TeamsFile resolves teams from a file, for the CLI where GitHub's API is not
// at hand. The file is a YAML (or JSON) mapping from "@org/team" to a list of
// logins:
//
//	"@acme/catalog-admins": [alice, carol]
//	"@etcd-io/maintainers": [dave]
//
// Teams not in the file are unresolved, so decisions that need them come out
// Unresolved rather than No.
type TeamsFile struct {
	file  string
	teams map[string][]string // key: lower-case "org/team"
}

// LoadTeamsFile reads and parses a teams file of at most MaxFileSize bytes.
func LoadTeamsFile(filename string) (*TeamsFile, error) {
	f, err := os.Open(filename)
	if err != nil {
		return nil, fmt.Errorf("reading teams file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading teams file %s: %w", filename, err)
	}
	return ParseTeamsFile(filename, data)
}

// ParseTeamsFile parses the content of a teams file; file names it in
// problems. On failure the error is a *ParseError.
func ParseTeamsFile(file string, data []byte) (*TeamsFile, error) {
	p := &parser{file: file}
	t := &TeamsFile{file: file, teams: map[string][]string{}}
	root := p.document(data)
	if len(p.problems) == 0 && root != nil && !isNull(root) {
		handlers := map[string]func(k, v *yaml.Node){}
		if m := p.deref(root); m != nil && m.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(m.Content); i += 2 {
				key := p.deref(m.Content[i])
				if key == nil || key.Kind != yaml.ScalarNode {
					continue
				}
				name := key.Value
				handlers[name] = func(k, v *yaml.Node) {
					pr, err := ParsePrincipal(name)
					if err != nil || !pr.IsTeam() {
						p.add(k, "keys are teams written \"@org/team-slug\"", "%q is not a team", name)
						return
					}
					var members []string
					p.strings(v, name, func(it *yaml.Node, s string) {
						if !ValidLogin(s) {
							p.add(it, "write GitHub logins, one per item", "%q is not a valid GitHub login", s)
							return
						}
						members = append(members, s)
					})
					t.teams[strings.ToLower(pr.Org+"/"+pr.Team)] = members
				}
			}
		}
		p.fields(root, "the teams file", handlers)
	}
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	return t, nil
}

// TeamMembers returns the logins listed for @org/team, or an error wrapping
// ErrUnknownTeam when the file does not list it.
func (t *TeamsFile) TeamMembers(ctx context.Context, org, team string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, ok := t.teams[strings.ToLower(org+"/"+team)]
	if !ok {
		return nil, fmt.Errorf("@%s/%s is not in %s: %w", org, team, t.file, ErrUnknownTeam)
	}
	return append([]string(nil), m...), nil
}
