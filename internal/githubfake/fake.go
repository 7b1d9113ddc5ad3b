package githubfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Fake.
type Options struct {
	// AppID and AppSlug name the App; AppSlug defaults to "catalogbot".
	AppID   int64
	AppSlug string
	// PublicKey verifies the App's JWTs.
	PublicKey *rsa.PublicKey
	// RateLimit is the hourly request budget of each identity (the App's JWT,
	// each installation); 0 means 5000 as for an installation on github.com.
	RateLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WebhookURL and WebhookSecret are where Deliver and redeliveries send
	// events; they may also be set later with SetWebhook.
	WebhookURL    string
	WebhookSecret string
}

// Fake is GitHub's REST API for one App, in memory. It is an http.Handler;
// serve it with httptest.NewServer and point a client at APIURL(server.URL).
type Fake struct {
	mu  sync.Mutex
	mux *http.ServeMux

	appID   int64
	appSlug string
	pub     *rsa.PublicKey
	now     func() time.Time
	limit   int

	installations map[int64]*installation
	tokens        map[string]*token
	repos         map[string]*repo // key: lower "owner/name"
	teams         map[string]*team // key: lower "org/slug"
	budgets       map[string]*budget
	faults        []*fault
	outages       []*outage
	secondary     map[string]*secondaryLimit // by identity
	requests      []Request
	deliveries    []*Delivery
	merges        []Merge
	webhookURL    string
	webhookSecret string
	webhookWG     sync.WaitGroup

	nextID int64
}

type installation struct {
	id      int64
	account string
	denied  map[string]bool // permissions the App was not granted
}

type token struct {
	value        string
	installation int64
	expires      time.Time
}

type team struct {
	org, slug string
	members   []string
}

type budget struct {
	used  int
	reset time.Time
	// limitedAt is when the caller was first told the budget is spent (an
	// answer with X-RateLimit-Remaining: 0); zero while it is not.
	limitedAt time.Time
	// status answers requests while the budget is spent: 403, or 429 as
	// GitHub sometimes does.
	status int
}

// Request is one request the fake answered, for tests that count calls and
// check that a client waits as GitHub asks.
type Request struct {
	Method, Path string
	// Route is the endpoint's pattern ("GET /repos/{owner}/{repo}/pulls/{number}"); RoutePermission tells
	// what GitHub requires of an App for it.
	Route  string
	Status int
	// Conditional is true when the request carried If-None-Match.
	Conditional bool
	// At is when the request arrived, on the fake's clock.
	At time.Time
	// Identity is whose budget the request spends: "app" (the App's JWT) or
	// "installation:ID" (a token of that installation); "" when it was
	// answered before authentication.
	Identity string
	// Fault is the injected failure that answered the request, "" for none.
	Fault FaultKind
	// RetryAt, on a rate-limited answer, is the earliest time GitHub allows
	// the identity's next request (Retry-After, or X-RateLimit-Reset).
	RetryAt time.Time
	// Early marks a request that came while its identity was rate limited
	// after an answer had said so (sent at LimitedAt): GitHub asks clients
	// not to do that, and may ban integrations that keep on.
	Early     bool
	LimitedAt time.Time
}

// New makes an empty fake with the App and no installations.
func New(o Options) *Fake {
	f := &Fake{
		appID:         o.AppID,
		appSlug:       o.AppSlug,
		pub:           o.PublicKey,
		now:           o.Now,
		limit:         o.RateLimit,
		installations: map[int64]*installation{},
		tokens:        map[string]*token{},
		repos:         map[string]*repo{},
		teams:         map[string]*team{},
		budgets:       map[string]*budget{},
		secondary:     map[string]*secondaryLimit{},
		webhookURL:    o.WebhookURL,
		webhookSecret: o.WebhookSecret,
		nextID:        1000,
	}
	if f.appSlug == "" {
		f.appSlug = "catalogbot"
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.limit <= 0 {
		f.limit = 5000
	}
	f.routes()
	return f
}

// APIURL is the API root a go-github client should use for a server at
// serverURL: the fake answers under /api/v3/ as GitHub Enterprise Server does
// (and at the root as api.github.com does).
func APIURL(serverURL string) string { return strings.TrimSuffix(serverURL, "/") + "/api/v3/" }

// GenerateAppKey makes an App key pair for tests: the key and its PEM (PKCS#1, as GitHub issues them).
func GenerateAppKey() (*rsa.PrivateKey, []byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return k, p, nil
}

// BotLogin is the login GitHub shows for the App's own actions.
func (f *Fake) BotLogin() string { return f.appSlug + "[bot]" }

func (f *Fake) id() int64 {
	f.nextID++
	return f.nextID
}

// AddInstallation installs the App on account (a user or organization).
func (f *Fake) AddInstallation(id int64, account string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.installations[id] = &installation{id: id, account: account, denied: map[string]bool{}}
}

// DenyPermission withdraws a permission from an installation, so the
// endpoints needing it answer 403 "Resource not accessible by integration":
// "administration" (branch protection), "members" (team members).
func (f *Fake) DenyPermission(installationID int64, permission string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst := f.installations[installationID]; inst != nil {
		inst.denied[permission] = true
	}
}

// permitted answers 403 as GitHub does when the installation lacks a permission.
func (c *call) permitted(permission string) (reply, bool) {
	if c.inst != nil && c.inst.denied[permission] {
		return errorReply(403, "Resource not accessible by integration"), false
	}
	return reply{}, true
}

// Repo describes a repository to add.
type Repo struct {
	Owner, Name string
	// Installation is the installation that can see the repository.
	Installation int64
	// DefaultBranch defaults to "main"; DefaultSHA is its head commit (one is made up when empty).
	DefaultBranch string
	DefaultSHA    string
	Private       bool
	// MergeMethods allowed ("merge", "squash", "rebase"); empty allows all three.
	MergeMethods []string
	// GitDir is the bare repository the Git database API (blobs, trees, commits, references) and pull
	// request creation write to; without it those endpoints answer 409 as for an empty repository.
	GitDir string
}

// AddRepo adds a repository visible to an existing installation.
func (f *Fake) AddRepo(r Repo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.installations[r.Installation]; !ok {
		return fmt.Errorf("githubfake: installation %d does not exist: call AddInstallation first", r.Installation)
	}
	if r.Owner == "" || r.Name == "" {
		return fmt.Errorf("githubfake: a repository needs an owner and a name")
	}
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	if r.DefaultSHA == "" {
		r.DefaultSHA = MakeSHA(r.Owner + "/" + r.Name + "@" + r.DefaultBranch)
	}
	methods := map[string]bool{"merge": true, "squash": true, "rebase": true}
	if len(r.MergeMethods) > 0 {
		methods = map[string]bool{}
		for _, m := range r.MergeMethods {
			methods[m] = true
		}
	}
	f.repos[repoKey(r.Owner, r.Name)] = &repo{
		id:            f.id(),
		owner:         r.Owner,
		name:          r.Name,
		installation:  r.Installation,
		defaultBranch: r.DefaultBranch,
		private:       r.Private,
		mergeMethods:  methods,
		branches:      map[string]*branch{r.DefaultBranch: {sha: r.DefaultSHA}},
		pulls:         map[int]*pull{},
		checkRuns:     map[int64]*checkRun{},
		comments:      map[int64]*comment{},
		statuses:      map[string][]Status{},
		collaborators: map[string]string{},
		gitDir:        r.GitDir,
	}
	return nil
}

// MakeSHA returns a made-up commit SHA derived from s.
func MakeSHA(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// repoLocked returns a repository or an error naming it.
func (f *Fake) repoLocked(owner, name string) (*repo, error) {
	r := f.repos[repoKey(owner, name)]
	if r == nil {
		return nil, fmt.Errorf("githubfake: repository %s/%s does not exist: call AddRepo first", owner, name)
	}
	return r, nil
}

// pullLocked returns a pull request and its repository, or an error naming
// whichever does not exist.
func (f *Fake) pullLocked(owner, name string, number int) (*repo, *pull, error) {
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, nil, err
	}
	p := r.pulls[number]
	if p == nil {
		return nil, nil, fmt.Errorf("githubfake: %s#%d does not exist", r.fullName(), number)
	}
	return r, p, nil
}

// SetBranch points a branch at sha, creating it if needed.
func (f *Fake) SetBranch(owner, name, branchName, sha string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	r.setBranch(branchName, sha)
	return nil
}

// setBranch points a branch at sha, creating it if needed; the caller holds the fake's lock.
func (r *repo) setBranch(name, sha string) {
	b := r.branches[name]
	if b == nil {
		b = &branch{}
		r.branches[name] = b
	}
	b.sha = sha
}

// PushBranch moves a branch to sha as a git push does (creating it if needed): the open pull requests of
// the repository's own whose head is that branch move with it, and so do their refs/pull/N/head when the
// repository has a git directory (the objects must be there already).
func (f *Fake) PushBranch(owner, name, branchName, sha string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	r.setBranch(branchName, sha)
	if r.gitDir != "" {
		if _, err := r.g().Git(nil, nil, "update-ref", "refs/heads/"+branchName, sha); err != nil {
			return err
		}
	}
	for _, p := range r.pulls {
		if p.State != "open" || p.HeadRepo != "" || p.HeadRef != branchName {
			continue
		}
		p.HeadSHA, p.updated = sha, f.now()
		if r.gitDir != "" {
			if _, err := r.g().Git(nil, nil, "update-ref", fmt.Sprintf("refs/pull/%d/head", p.Number), sha); err != nil {
				return err
			}
		}
	}
	return nil
}

// BranchSHA returns the commit a branch points at.
func (f *Fake) BranchSHA(owner, name, branchName string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[repoKey(owner, name)]
	if r == nil || r.branches[branchName] == nil {
		return "", false
	}
	return r.branches[branchName].sha, true
}

// SetTeam defines a team of org with its members (logins).
func (f *Fake) SetTeam(org, slug string, members []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teams[strings.ToLower(org+"/"+slug)] = &team{org: org, slug: slug, members: append([]string(nil), members...)}
}

// Requests returns the requests answered so far, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Merges returns the merges made through the API, in order.
func (f *Fake) Merges() []Merge {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Merge(nil), f.merges...)
}

// Merge is one merge made through the API.
type Merge struct {
	Owner, Repo string
	Number      int
	// HeadSHA is the head that was merged, MergeSHA the new commit on the base branch.
	HeadSHA, MergeSHA string
	Method            string
	CommitTitle       string
	// RequestSHA is the sha the request carried ("" when it carried none).
	RequestSHA string
	At         time.Time
}

// SetRateLimit changes the hourly budget of every identity; remaining
// budgets are recomputed against it.
func (f *Fake) SetRateLimit(limit int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = limit
}

// ExhaustRateLimit uses up the budget of an installation (0: the App's JWT
// budget) until its window resets.
func (f *Fake) ExhaustRateLimit(installationID int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.budgetLocked(budgetKey(installationID))
	b.used = f.limit
}

func budgetKey(installationID int64) string {
	if installationID == 0 {
		return "app"
	}
	return fmt.Sprintf("installation:%d", installationID)
}

func (f *Fake) budgetLocked(key string) *budget {
	now := f.now()
	b := f.budgets[key]
	if b == nil || !now.Before(b.reset) {
		b = &budget{reset: now.Add(time.Hour).Truncate(time.Second)}
		f.budgets[key] = b
	}
	return b
}

// sortedInstallations returns installation ids in ascending order.
func (f *Fake) sortedInstallations() []int64 {
	ids := make([]int64, 0, len(f.installations))
	for id := range f.installations {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
