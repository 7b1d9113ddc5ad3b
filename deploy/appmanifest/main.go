// Command appmanifest registers catalogbot's GitHub App from
// deploy/github-app.yaml in two steps of GitHub's manifest flow:
//
//	go run ./deploy/appmanifest --org ORG > register.html   # open it, press the button
//	go run ./deploy/appmanifest --exchange CODE --out-dir app-credentials
//
// The first writes a page that posts the manifest (as JSON) to GitHub; the
// second trades the code GitHub hands back for the App ID, private key and
// webhook secret, written as files (mode 0600) for a Kubernetes Secret.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

const maxBody = 1 << 20

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("appmanifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "deploy/github-app.yaml", "the App manifest (YAML)")
	org := fs.String("org", "", "register the App for this organization (default: your personal account)")
	githubURL := fs.String("github-url", "https://github.com", "GitHub's web address (GitHub Enterprise Server: https://HOST)")
	apiURL := fs.String("api-url", "https://api.github.com", "GitHub's REST API root (GitHub Enterprise Server: https://HOST/api/v3)")
	exchange := fs.String("exchange", "", "the code from the redirect after registration (valid one hour)")
	outDir := fs.String("out-dir", "app-credentials", "with --exchange: where to write app-id, private-key.pem and webhook-secrets")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: appmanifest [--org ORG] > register.html\n       appmanifest --exchange CODE [--out-dir DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "appmanifest: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var err error
	if *exchange != "" {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		err = exchangeCode(ctx, http.DefaultClient, *apiURL, *exchange, *outDir, stdout)
	} else {
		err = writeRegisterPage(*manifest, *githubURL, *org, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "appmanifest: %v\n", err)
		return 2
	}
	return 0
}

var registerPage = template.Must(template.New("register").Parse(`<!doctype html>
<meta charset="utf-8">
<title>Register {{.Name}}</title>
<p>This posts the catalogbot App manifest to {{.Action}}. GitHub shows the App before creating it.</p>
<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Register {{.Name}} on GitHub</button>
</form>
`))

// writeRegisterPage writes an HTML form that posts the manifest to GitHub.
func writeRegisterPage(manifestPath, githubURL, org string, w io.Writer) error {
	b, err := os.ReadFile(manifestPath)
	if err != nil {
		return err
	}
	if len(b) > maxBody {
		return fmt.Errorf("%s is larger than %d bytes", manifestPath, maxBody)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hookURL, _ := hook["url"].(string); strings.Contains(hookURL, "example.com") {
		return fmt.Errorf("%s: set hook_attributes.url to your webhook address first (it is %s)", manifestPath, hookURL)
	}
	js, err := json.Marshal(m)
	if err != nil {
		return err
	}
	base, err := url.Parse(strings.TrimSuffix(githubURL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return fmt.Errorf("--github-url %q is not an absolute URL", githubURL)
	}
	path := "/settings/apps/new"
	if org != "" {
		path = "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	state := make([]byte, 16)
	if _, err := rand.Read(state); err != nil {
		return err
	}
	action := base.String() + path + "?state=" + hex.EncodeToString(state)
	name, _ := m["name"].(string)
	return registerPage.Execute(w, struct{ Name, Action, Manifest string }{name, action, string(js)})
}

// conversion is the part of GitHub's answer to a manifest code that the server needs.
type conversion struct {
	ID            int64  `json:"id"`
	Slug          string `json:"slug"`
	HTMLURL       string `json:"html_url"`
	PEM           string `json:"pem"`
	WebhookSecret string `json:"webhook_secret"`
}

// exchangeCode trades the code for the App's credentials and writes them.
func exchangeCode(ctx context.Context, c *http.Client, apiURL, code, outDir string, stdout io.Writer) error {
	endpoint := strings.TrimSuffix(apiURL, "/") + "/app-manifests/" + url.PathEscape(code) + "/conversions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("GitHub answered %s to the code exchange (codes are valid for one hour and once): %s", resp.Status, bytes.TrimSpace(body))
	}
	var conv conversion
	if err := json.Unmarshal(body, &conv); err != nil {
		return fmt.Errorf("GitHub's answer does not parse: %w", err)
	}
	if conv.ID == 0 || conv.PEM == "" || conv.WebhookSecret == "" {
		return errors.New("GitHub's answer lacks the App ID, the key or the webhook secret")
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return err
	}
	for name, content := range map[string]string{
		"app-id":          strconv.FormatInt(conv.ID, 10),
		"private-key.pem": conv.PEM,
		"webhook-secrets": conv.WebhookSecret,
	} {
		if err := os.WriteFile(filepath.Join(outDir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "registered App %s (ID %d): %s\ncredentials written to %s (app-id, private-key.pem, webhook-secrets)\n",
		conv.Slug, conv.ID, conv.HTMLURL, outDir)
	return nil
}
