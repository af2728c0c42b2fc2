// Package cronschedule parses CronJob schedules and time zones, once, for
// the apiserver's validation (pkg/registry/validation) and the CronJob
// controller (pkg/controller/cronjob) alike: what the apiserver accepts is
// what the controller can run. It wraps robfig/cron's standard parser, as
// Kubernetes does, and owns no state.
package cronschedule
