// Package cronjob runs Kubernetes' CronJob controller ("cronjob" in
// kube-controller-manager): it creates a batch/v1 Job for every time a
// CronJob's schedule comes due and keeps the CronJob's status (active
// Jobs, lastScheduleTime, lastSuccessfulTime).
//
// Schedules are standard five-field cron expressions and the @yearly,
// @monthly, @weekly, @daily, @hourly (and @every) shorthands, parsed with
// github.com/robfig/cron/v3 and evaluated in spec.timeZone (an IANA zone,
// loaded with time.LoadLocation) or else the controller's local zone. TZ=
// and CRON_TZ= prefixes are not accepted, as in Kubernetes' API.
//
// At a due time it creates the Job <cronjob>-<scheduled time in minutes
// since the epoch> from spec.jobTemplate, controlled by the CronJob and
// annotated with batch.kubernetes.io/cronjob-scheduled-timestamp; the
// deterministic name keeps a time from being run twice. Only the most
// recent missed time is run; with more than 100 missed the controller
// warns (TooManyMissedTimes), and a time older than
// startingDeadlineSeconds is skipped (MissSchedule). concurrencyPolicy
// Forbid skips a time while a Job is active, Replace deletes the active
// Jobs first; suspend stops new Jobs. Finished Jobs beyond
// successfulJobsHistoryLimit and failedJobsHistoryLimit are deleted,
// oldest first, with background propagation.
//
// It reads CronJobs and Jobs through informers, writes through the API
// (a conflict requeues), and requeues each CronJob for its next due time
// instead of polling. It leaves Jobs it does not control alone, and Pods
// to the Job controller.
package cronjob
