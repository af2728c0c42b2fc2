package printers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Deployments.

var Deployment = Typed(
	append([]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Ready", "string", "Number of the pod with ready state"),
		Column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		Column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		AgeColumn(),
	}, templateColumns(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])...),
	deploymentCells,
)

func deploymentCells(d *appsv1.Deployment, now time.Time) []interface{} {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	selector := "<invalid>"
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = sel.String()
	}
	return []interface{}{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, derefInt32(d.Spec.Replicas, 1)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		Age(d.CreationTimestamp, now),
		names,
		images,
		selector,
	}
}

// ReplicaSets.

var ReplicaSet = Typed(
	append([]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		Column("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		Column("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		AgeColumn(),
	}, templateColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])...),
	func(rs *appsv1.ReplicaSet, now time.Time) []interface{} {
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{
			rs.Name,
			int64(derefInt32(rs.Spec.Replicas, 1)),
			int64(rs.Status.Replicas),
			int64(rs.Status.ReadyReplicas),
			Age(rs.CreationTimestamp, now),
			names,
			images,
			metav1.FormatLabelSelector(rs.Spec.Selector),
		}
	},
)

// DaemonSets.

var DaemonSet = Typed(
	append([]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		Column("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		Column("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		Column("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		Column("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		Column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		AgeColumn(),
	}, templateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])...),
	func(ds *appsv1.DaemonSet, now time.Time) []interface{} {
		names, images := containerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{
			ds.Name,
			int64(ds.Status.DesiredNumberScheduled),
			int64(ds.Status.CurrentNumberScheduled),
			int64(ds.Status.NumberReady),
			int64(ds.Status.UpdatedNumberScheduled),
			int64(ds.Status.NumberAvailable),
			labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			Age(ds.CreationTimestamp, now),
			names,
			images,
			metav1.FormatLabelSelector(ds.Spec.Selector),
		}
	},
)

// StatefulSets.

var StatefulSet = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Ready", "string", "Number of the pod with ready state"),
		AgeColumn(),
		Wide(Column("Containers", "string", "Names of each container in the template.")),
		Wide(Column("Images", "string", "Images referenced by each container in the template.")),
	},
	func(ss *appsv1.StatefulSet, now time.Time) []interface{} {
		names, images := containerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{
			ss.Name,
			fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, derefInt32(ss.Spec.Replicas, 1)),
			Age(ss.CreationTimestamp, now),
			names,
			images,
		}
	},
)

// Jobs.

var Job = Typed(
	append([]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Status", "string", "Status of the job."),
		Column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		Column("Duration", "string", "Time required to complete the job."),
		AgeColumn(),
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	jobCells,
)

func jobCells(job *batchv1.Job, now time.Time) []interface{} {
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return []interface{}{
		job.Name,
		jobStatus(job),
		jobCompletions(job),
		jobDuration(job, now),
		Age(job.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(job.Spec.Selector),
	}
}

// jobStatus picks the most telling state from the job's conditions.
func jobStatus(job *batchv1.Job) string {
	switch {
	case hasJobCondition(job, batchv1.JobComplete):
		return "Complete"
	case hasJobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case hasJobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case hasJobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	default:
		return "Running"
	}
}

func hasJobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobCompletions renders "succeeded/completions"; jobs without a completion
// count need one success, shown as "n/1" or "n/1 of <parallelism>".
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if p := derefInt32(job.Spec.Parallelism, 0); p > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is the run time so far, or start to completion; empty before start.
func jobDuration(job *batchv1.Job, now time.Time) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}

// CronJobs.

var CronJob = Typed(
	append([]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
		Column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
		Column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
		Column("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
		Column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
		AgeColumn(),
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	cronJobCells,
)

func cronJobCells(cj *batchv1.CronJob, now time.Time) []interface{} {
	lastSchedule := None
	if t := cj.Status.LastScheduleTime; t != nil {
		lastSchedule = Age(*t, now)
	}
	timeZone := None
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	tmpl := cj.Spec.JobTemplate.Spec
	names, images := containerCells(tmpl.Template.Spec.Containers)
	return []interface{}{
		cj.Name,
		cj.Spec.Schedule,
		timeZone,
		boolPtrCell(cj.Spec.Suspend),
		int64(len(cj.Status.Active)),
		lastSchedule,
		Age(cj.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(tmpl.Selector),
	}
}
