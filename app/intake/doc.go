// Package intake is the webhook: POST /webhook verifies a delivery's
// signature under bounded reads, turns the event into a plan (Route: each
// event's handler is a pure function of the payload that names the jobs and
// the repositories it teaches) and commits the delivery with its jobs in one
// transaction before answering 2xx, so an acknowledged event is never lost.
//
// Layer: a feature of app, above app/jobs, which it imports (with
// internal/markdown); it reaches the database through DeliveryStore and the
// metrics through Metrics, interfaces of its own, and imports no other
// feature. The composition root (app) builds it; recovery plans the jobs a
// missed delivery would have planned with EnqueueCheck and CommandJob.
package intake
