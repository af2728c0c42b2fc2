package kinds

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// imagesTemplate is a pod template with a container per name, of image name:1.
func imagesTemplate(names ...string) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	for _, n := range names {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: n, Image: n + ":1"})
	}
	return t
}

func TestWorkloadCells(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	runCellCases(t, []cellCase{
		{
			name: "deployment",
			gk:   schema.GroupKind{Group: "apps", Kind: "Deployment"},
			obj: &appsv1.Deployment{
				ObjectMeta: objMeta("web"),
				Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(3)), Selector: selector, Template: imagesTemplate("nginx", "sidecar")},
				Status:     appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
			},
			want: map[string]interface{}{
				"Name": "web", "Ready": "2/3", "Up-to-date": int64(3), "Available": int64(2), "Age": "10m",
				"Containers": "nginx,sidecar", "Images": "nginx:1,sidecar:1", "Selector": "app=web",
			},
		},
		{
			name: "replicaset",
			gk:   schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
			obj: &appsv1.ReplicaSet{
				ObjectMeta: objMeta("web-5d4f"),
				Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(2)), Selector: selector, Template: imagesTemplate("nginx")},
				Status:     appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1},
			},
			want: map[string]interface{}{
				"Desired": int64(2), "Current": int64(2), "Ready": int64(1),
				"Containers": "nginx", "Images": "nginx:1", "Selector": "app=web",
			},
		},
		{
			name: "complete job",
			gk:   schema.GroupKind{Group: "batch", Kind: "Job"},
			obj: &batchv1.Job{
				ObjectMeta: objMeta("pi"),
				Spec:       batchv1.JobSpec{Completions: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": "pi"}}, Template: imagesTemplate("pi")},
				Status: batchv1.JobStatus{
					Succeeded: 1, StartTime: ptr.To(ago(5 * time.Minute)), CompletionTime: ptr.To(ago(4*time.Minute + 30*time.Second)),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}},
				},
			},
			want: map[string]interface{}{
				"Status": "Complete", "Completions": "1/1", "Duration": "30s", "Age": "10m",
				"Containers": "pi", "Images": "pi:1", "Selector": "job-name=pi",
			},
		},
		{
			name: "running parallel job",
			gk:   schema.GroupKind{Group: "batch", Kind: "Job"},
			obj: &batchv1.Job{
				ObjectMeta: objMeta("work"),
				Spec:       batchv1.JobSpec{Parallelism: ptr.To(int32(3))},
				Status:     batchv1.JobStatus{StartTime: ptr.To(ago(2 * time.Minute))},
			},
			want: map[string]interface{}{"Status": "Running", "Completions": "0/1 of 3", "Duration": "2m", "Selector": "<none>"},
		},
		{
			name: "failed job",
			gk:   schema.GroupKind{Group: "batch", Kind: "Job"},
			obj: &batchv1.Job{
				ObjectMeta: objMeta("bad"),
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue},
				}},
			},
			want: map[string]interface{}{"Status": "Failed", "Completions": "0/1", "Duration": ""},
		},
		{
			name: "suspended job",
			gk:   schema.GroupKind{Group: "batch", Kind: "Job"},
			obj: &batchv1.Job{
				ObjectMeta: objMeta("later"),
				Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}},
			},
			want: map[string]interface{}{"Status": "Suspended"},
		},
		{
			name: "cronjob never run",
			gk:   schema.GroupKind{Group: "batch", Kind: "CronJob"},
			obj: &batchv1.CronJob{
				ObjectMeta: objMeta("hello"),
				Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", Suspend: ptr.To(false),
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: imagesTemplate("hello")}}},
			},
			want: map[string]interface{}{
				"Schedule": "*/1 * * * *", "Timezone": "<none>", "Suspend": "False", "Active": int64(0),
				"Last Schedule": "<none>", "Age": "10m", "Containers": "hello", "Images": "hello:1", "Selector": "<none>",
			},
		},
		{
			name: "cronjob scheduled",
			gk:   schema.GroupKind{Group: "batch", Kind: "CronJob"},
			obj: &batchv1.CronJob{
				ObjectMeta: objMeta("hello"),
				Spec:       batchv1.CronJobSpec{Schedule: "@hourly", TimeZone: ptr.To("Etc/UTC")},
				Status: batchv1.CronJobStatus{
					Active:           []corev1.ObjectReference{{Name: "hello-1"}},
					LastScheduleTime: ptr.To(ago(45 * time.Second)),
				},
			},
			want: map[string]interface{}{"Timezone": "Etc/UTC", "Suspend": "<unset>", "Active": int64(1), "Last Schedule": "45s"},
		},
		{
			name: "daemonset",
			gk:   schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
			obj: &appsv1.DaemonSet{
				ObjectMeta: objMeta("agent"),
				Spec: appsv1.DaemonSetSpec{Selector: selector, Template: func() corev1.PodTemplateSpec {
					t := imagesTemplate("agent")
					t.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
					return t
				}()},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2},
			},
			want: map[string]interface{}{
				"Desired": int64(3), "Current": int64(3), "Ready": int64(2), "Up-to-date": int64(3), "Available": int64(2),
				"Node Selector": "kubernetes.io/os=linux", "Selector": "app=web",
			},
		},
		{
			name: "statefulset",
			gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
			obj: &appsv1.StatefulSet{
				ObjectMeta: objMeta("db"),
				Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)), Template: imagesTemplate("pg")},
				Status:     appsv1.StatefulSetStatus{ReadyReplicas: 3},
			},
			want: map[string]interface{}{"Ready": "3/3", "Containers": "pg", "Images": "pg:1"},
		},
	})
}

func TestUnstructuredAndForeignObjects(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]interface{}{"name": "web", "creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec":       map[string]interface{}{"replicas": int64(4)},
		"status":     map[string]interface{}{"readyReplicas": int64(4)},
	}}
	got := render(t, schema.GroupKind{Group: "apps", Kind: "Deployment"}, u)
	if got["Name"] != "web" || got["Ready"] != "4/4" || got["Age"] != "10m" {
		t.Errorf("unstructured deployment rendered as %v", got)
	}

	// A Pod handed to the Deployment printer: name only, other cells empty.
	got = render(t, schema.GroupKind{Group: "apps", Kind: "Deployment"}, &corev1.Pod{ObjectMeta: objMeta("web")})
	if got["Name"] != "web" || got["Ready"] != nil {
		t.Errorf("foreign object rendered as %v", got)
	}
}
