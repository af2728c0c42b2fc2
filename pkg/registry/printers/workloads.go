package printers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Deployments.

// ReplicaSets.

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
	}, TemplateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])...),
	func(ds *appsv1.DaemonSet, now time.Time) []interface{} {
		names, images := ContainerCells(ds.Spec.Template.Spec.Containers)
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
		names, images := ContainerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{
			ss.Name,
			fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, DerefInt32(ss.Spec.Replicas, 1)),
			Age(ss.CreationTimestamp, now),
			names,
			images,
		}
	},
)

// Jobs.

// CronJobs.
