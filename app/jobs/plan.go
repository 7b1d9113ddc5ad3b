package jobs

import (
	"time"

	"github.com/riverqueue/river"
)

// HeadSeen says that HeadSHA was the head of a pull request at the time it is recorded with.
type HeadSeen struct {
	Owner, Repo string
	Number      int
	HeadSHA     string
}

// Delivery is one verified webhook delivery, as recorded in the delivery log.
// The payload itself is not kept: what must survive is the job it caused.
type Delivery struct {
	ID             string // X-GitHub-Delivery; a redelivery keeps it
	Event          string // X-GitHub-Event
	Action         string
	InstallationID int64
	Repo           string // owner/name, "" for events without a repository
	ReceivedAt     time.Time
}

// InstalledRepo is a repository the App is installed on, as learned from
// webhooks. The resync job walks these.
type InstalledRepo struct {
	InstallationID int64
	Owner, Name    string
	CloneURL       string
}

// Plan is what a delivery changes: jobs to enqueue and installed repositories
// to record or forget, all written in the delivery's transaction.
type Plan struct {
	Jobs         []river.InsertManyParams
	UpsertRepos  []InstalledRepo
	RemoveRepos  []InstalledRepo // by Owner/Name
	RemoveInstID int64           // forget every repository of this installation (uninstalled)
	// Heads are pull request heads the delivery shows, recorded in the head log at its receipt.
	Heads []HeadSeen
}
