// Package cronschedule parses cron schedules and time zones, once, for
// the apiserver's validation (pkg/registry: CronJobs and schedule
// Triggers) and the controllers that run them (pkg/controller/cronjob,
// pkg/workflow/trigger) alike: what the apiserver accepts is what the
// controllers can run. It wraps robfig/cron's standard parser, as
// Kubernetes does, and evaluates a Schedule in its time zone: the next due
// time, and the most recent one missed (with Kubernetes' bound on how
// many are walked). It owns no state.
package cronschedule
