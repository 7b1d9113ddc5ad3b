package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// appManifest is GitHub's App manifest format (the fields this App uses).
type appManifest struct {
	Name           string `json:"name"`
	Description    string `json:"description"`
	URL            string `json:"url"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// alwaysSent are the events GitHub sends every App without a subscription.
var alwaysSent = []string{"installation", "installation_repositories"}

func readManifest(t *testing.T) appManifest {
	t.Helper()
	b, err := os.ReadFile("github-app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m appManifest
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("github-app.yaml: %v", err)
	}
	return m
}

func TestAppManifestPermissionsAreMinimal(t *testing.T) {
	m := readManifest(t)
	want := map[string]string{
		"checks":         "write",
		"pull_requests":  "write",
		"issues":         "write",
		"contents":       "write",
		"metadata":       "read",
		"members":        "read",
		"statuses":       "read",
		"administration": "read",
		"merge_queues":   "read",
	}
	if !reflect.DeepEqual(m.DefaultPermissions, want) {
		t.Errorf("default_permissions = %v, want exactly %v", m.DefaultPermissions, want)
	}
	if m.Name == "" || m.URL == "" {
		t.Errorf("name %q and url %q are required", m.Name, m.URL)
	}
	if !m.HookAttributes.Active || !strings.HasPrefix(m.HookAttributes.URL, "https://") || !strings.HasSuffix(m.HookAttributes.URL, "/webhook") {
		t.Errorf("hook_attributes = %+v, want an active https URL ending in /webhook (the server's route)", m.HookAttributes)
	}
	if m.Public {
		t.Errorf("public = true, want false: only the registering account installs it")
	}
}

// TestAppManifestEventsAreTheHandledOnes compares default_events with the
// events the server has handlers for (app/intake/webhook.go, eventHandlers), so
// a new handler without a subscription, or the reverse, fails here.
func TestAppManifestEventsAreTheHandledOnes(t *testing.T) {
	m := readManifest(t)
	handled := handledEvents(t)
	var want []string
	for _, e := range handled {
		if !contains(alwaysSent, e) {
			want = append(want, e)
		}
	}
	got := append([]string(nil), m.DefaultEvents...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default_events = %v, want the handled events %v (less %v, which GitHub always sends)", got, want, alwaysSent)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// handledEvents reads the keys of the map eventHandlers returns in app/intake/webhook.go.
func handledEvents(t *testing.T) []string {
	t.Helper()
	src := filepath.Join("..", "app", "intake", "webhook.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", src, err)
	}
	var events []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "eventHandlers" {
			return true
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						events = append(events, s)
					}
				}
			}
			return true
		})
		return false
	})
	if len(events) == 0 {
		t.Fatalf("found no eventHandlers map in %s; update this test to where the server lists its events", src)
	}
	sort.Strings(events)
	return events
}
