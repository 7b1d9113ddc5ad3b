// Package pipeline is the check job: for one pull request head (CheckPR) or
// merge queue group head (CheckGroup) it starts the check runs, fetches both
// revisions through the git cache, builds the checks' input, runs the
// configured checks and reports each run once, however often the job is
// interrupted. What a job does once its checks ran, or could not, is decided
// by a pure function of what it observed (decideRun: report, superseded,
// retry, failed); the check runs are reported through ghapp.JobRuns, bound
// once per job.
//
// Layer: a feature of app, above app/jobs, app/store and app/ghapp, which it
// imports. Of the other features it reads app/merge (what a review is; the
// merge hears of each check through Recorder, an interface of this package)
// and app/rebuild (the App's provenance of its catalog updates); neither
// imports it. Only the composition root (app) uses it: it builds the pipeline
// once (New) and registers its workers.
package pipeline
