package printers

import (
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	now     = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	created = metav1.NewTime(now.Add(-10 * time.Minute))
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func ptr[T any](v T) *T { return &v }

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: created}
}

var (
	gkPod       = schema.GroupKind{Kind: "Pod"}
	gkNode      = schema.GroupKind{Kind: "Node"}
	gkEndpoints = schema.GroupKind{Kind: "Endpoints"}
	gkEvent     = schema.GroupKind{Kind: "Event"}
)

// registry maps each kind to its printer, as pkg/registry/kinds wires
// the kinds it serves (and DaemonSets and StatefulSets, which it does not
// serve yet).
var registry = map[schema.GroupKind]Printer{
	{Group: "", Kind: "Pod"}:             Pod,
	{Group: "apps", Kind: "DaemonSet"}:   DaemonSet,
	{Group: "apps", Kind: "StatefulSet"}: StatefulSet,
}

// Lookup returns the printer of gk, with a copy of its columns.
func Lookup(gk schema.GroupKind) (Printer, bool) {
	p, ok := registry[gk]
	p.Columns = slices.Clone(p.Columns)
	return p, ok
}

// render looks up the printer for gk, renders obj and keys the cells by
// column name.
func render(t *testing.T, gk schema.GroupKind, obj runtime.Object) map[string]interface{} {
	t.Helper()
	p, ok := Lookup(gk)
	if !ok {
		t.Fatalf("no printer for %v", gk)
	}
	cells := p.Cells(obj, now)
	if len(cells) != len(p.Columns) {
		t.Fatalf("%v: %d cells for %d columns", gk, len(cells), len(p.Columns))
	}
	out := make(map[string]interface{}, len(cells))
	for i, c := range p.Columns {
		out[c.Name] = cells[i]
	}
	return out
}

type cellCase struct {
	name string
	gk   schema.GroupKind
	obj  runtime.Object
	want map[string]interface{} // subset of columns to check
}

func runCellCases(t *testing.T, cases []cellCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, tc.gk, tc.obj)
			for col, want := range tc.want {
				if g, ok := got[col]; !ok {
					t.Errorf("no column %q", col)
				} else if !reflect.DeepEqual(g, want) {
					t.Errorf("%s = %#v, want %#v", col, g, want)
				}
			}
		})
	}
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
}

func pod(containers int, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: objMeta("web"), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := 0; i < containers; i++ {
		name := string(rune('a' + i))
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: "nginx"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: name, Ready: true, State: running()})
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPodCells(t *testing.T) {
	always := ptr(corev1.ContainerRestartPolicyAlways)
	runCellCases(t, []cellCase{
		{
			name: "running ready",
			gk:   gkPod,
			obj:  pod(1, nil),
			want: map[string]interface{}{"Name": "web", "Ready": "1/1", "Status": "Running", "Restarts": "0", "Age": "10m"},
		},
		{
			name: "one of two ready, restarted",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[1]
				cs.Ready = false
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(5 * time.Minute)}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "Running", "Restarts": "3 (5m ago)"},
		},
		{
			name: "restarts without termination time",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 2
			}),
			want: map[string]interface{}{"Restarts": "2"},
		},
		{
			name: "crash loop",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[0]
				cs.Ready, cs.State, cs.RestartCount = false, waiting("CrashLoopBackOff"), 4
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(90 * time.Second)}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "CrashLoopBackOff", "Restarts": "4 (90s ago)"},
		},
		{
			name: "pending image pull",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("ContainerCreating")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "ContainerCreating"},
		},
		{
			name: "terminated without reason",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: 9}}
			}),
			want: map[string]interface{}{"Status": "Signal:9"},
		},
		{
			name: "succeeded",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Completed"},
		},
		{
			name: "completed container beside running one",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "Running"},
		},
		{
			name: "completed container beside running one, pod not ready",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Status": "NotReady"},
		},
		{
			name: "terminating",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr(ago(time.Second))
			}),
			want: map[string]interface{}{"Status": "Terminating"},
		},
		{
			name: "deleted succeeded pod keeps its status",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr(ago(time.Second))
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Status": "Completed"},
		},
		{
			name: "node lost",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr(ago(time.Second))
				p.Status.Reason = "NodeLost"
			}),
			want: map[string]interface{}{"Status": "Unknown"},
		},
		{
			name: "evicted",
			gk:   gkPod,
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web"),
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"},
			},
			want: map[string]interface{}{"Ready": "0/1", "Status": "Evicted"},
		},
		{
			name: "scheduling gated",
			gk:   gkPod,
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web"),
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated},
				}},
			},
			want: map[string]interface{}{"Status": "SchedulingGated", "IP": "<none>", "Node": "<none>"},
		},
		{
			name: "first init container running",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: running()},
					{Name: "i2", State: waiting("PodInitializing")},
				}
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("PodInitializing")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Init:0/2"},
		},
		{
			name: "second init container running",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: terminated("Completed", 0)},
					{Name: "i2", State: running()},
				}
			}),
			want: map[string]interface{}{"Status": "Init:1/2"},
		},
		{
			name: "init container crash loop",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: waiting("CrashLoopBackOff"), RestartCount: 2,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(time.Minute)}}},
				}
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("PodInitializing")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Init:CrashLoopBackOff", "Restarts": "2 (60s ago)"},
		},
		{
			name: "init container failed",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1", State: terminated("Error", 1)}}
			}),
			want: map[string]interface{}{"Status": "Init:Error"},
		},
		{
			name: "init container exit code",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1", State: terminated("", 2)}}
			}),
			want: map[string]interface{}{"Status": "Init:ExitCode:2"},
		},
		{
			name: "sidecar counts as container",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: always}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "proxy", Ready: true, Started: ptr(true), State: running(), RestartCount: 1,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Hour)}}},
				}
			}),
			want: map[string]interface{}{"Ready": "2/2", "Status": "Running", "Restarts": "1 (120m ago)"},
		},
		{
			name: "wide columns",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Status.PodIP = "10.244.1.5"
				p.Status.NominatedNodeName = "node-2"
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
				p.Status.Conditions = []corev1.PodCondition{
					{Type: "example.com/a", Status: corev1.ConditionTrue},
					{Type: "example.com/b", Status: corev1.ConditionFalse},
				}
			}),
			want: map[string]interface{}{"IP": "10.244.1.5", "Node": "node-1", "Nominated Node": "node-2", "Readiness Gates": "1/2"},
		},
		{
			name: "podIPs preferred",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.PodIP = "10.0.0.1"
				p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::1"}, {IP: "10.0.0.1"}}
			}),
			want: map[string]interface{}{"IP": "fd00::1", "Nominated Node": "<none>", "Readiness Gates": "<none>"},
		},
	})
}

func podTemplate(names ...string) corev1.PodTemplateSpec {
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
			name: "daemonset",
			gk:   schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
			obj: &appsv1.DaemonSet{
				ObjectMeta: objMeta("agent"),
				Spec: appsv1.DaemonSetSpec{Selector: selector, Template: func() corev1.PodTemplateSpec {
					t := podTemplate("agent")
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
				Spec:       appsv1.StatefulSetSpec{Replicas: ptr(int32(3)), Template: podTemplate("pg")},
				Status:     appsv1.StatefulSetStatus{ReadyReplicas: 3},
			},
			want: map[string]interface{}{"Ready": "3/3", "Containers": "pg", "Images": "pg:1"},
		},
	})
}

// zeroObjects holds an empty object of every kind with a printer.
var zeroObjects = map[schema.GroupKind]runtime.Object{
	{Kind: "Pod"}:                        &corev1.Pod{},
	{Group: "apps", Kind: "DaemonSet"}:   &appsv1.DaemonSet{},
	{Group: "apps", Kind: "StatefulSet"}: &appsv1.StatefulSet{},
}

// TestColumnDefinitions checks every printer's columns are well formed and
// that it renders exactly one cell per column even for an empty object.
func TestColumnDefinitions(t *testing.T) {
	if len(zeroObjects) != len(registry) {
		t.Errorf("zeroObjects covers %d kinds, registry has %d", len(zeroObjects), len(registry))
	}
	validType := map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "date": true}
	check := func(t *testing.T, p Printer) {
		names := 0
		seen := map[string]bool{}
		for _, c := range p.Columns {
			if !validType[c.Type] {
				t.Errorf("column %q: bad type %q", c.Name, c.Type)
			}
			if c.Description == "" {
				t.Errorf("column %q: no description", c.Name)
			}
			if c.Priority != 0 && c.Priority != 1 {
				t.Errorf("column %q: priority %d", c.Name, c.Priority)
			}
			if seen[c.Name] {
				t.Errorf("duplicate column %q", c.Name)
			}
			seen[c.Name] = true
			if c.Format == "name" {
				names++
				if c.Name != "Name" || c.Type != "string" {
					t.Errorf("name column is %q/%q", c.Name, c.Type)
				}
			}
		}
		if names != 1 {
			t.Errorf("%d name columns, want 1", names)
		}
	}
	for gk, obj := range zeroObjects {
		t.Run(gk.String(), func(t *testing.T) {
			p, ok := Lookup(gk)
			if !ok {
				t.Fatal("no printer")
			}
			check(t, p)
			if gk.Kind != "Event" && (p.Columns[0].Name != "Name" || p.Columns[0].Format != "name") {
				t.Errorf("first column is %q, want Name", p.Columns[0].Name)
			}
			if cells := p.Cells(obj, now); len(cells) != len(p.Columns) {
				t.Errorf("%d cells for %d columns", len(cells), len(p.Columns))
			}
		})
	}
	t.Run("Default", func(t *testing.T) { check(t, Default) })
}

func TestWideColumns(t *testing.T) {
	wideNames := func(gk schema.GroupKind) (normal, Wide []string) {
		p, _ := Lookup(gk)
		for _, c := range p.Columns {
			if c.Priority == 0 {
				normal = append(normal, c.Name)
			} else {
				Wide = append(Wide, c.Name)
			}
		}
		return normal, Wide
	}
	for _, tc := range []struct {
		gk           schema.GroupKind
		normal, Wide []string
	}{
		{gkPod, []string{"Name", "Ready", "Status", "Restarts", "Age"}, []string{"IP", "Node", "Nominated Node", "Readiness Gates"}},
	} {
		normal, Wide := wideNames(tc.gk)
		if !reflect.DeepEqual(normal, tc.normal) || !reflect.DeepEqual(Wide, tc.Wide) {
			t.Errorf("%v: columns %v wide %v, want %v wide %v", tc.gk, normal, Wide, tc.normal, tc.Wide)
		}
	}
}

func TestDefault(t *testing.T) {
	want := []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]},
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	}
	if !reflect.DeepEqual(Default.Columns, want) {
		t.Errorf("columns = %+v", Default.Columns)
	}
	local := time.FixedZone("CEST", 2*60*60)
	role := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "reader", CreationTimestamp: metav1.NewTime(time.Date(2025, 5, 1, 10, 30, 0, 0, local)),
	}}
	got := Default.Cells(role, now)
	if w := []interface{}{"reader", "2025-05-01T08:30:00Z"}; !reflect.DeepEqual(got, w) {
		t.Errorf("cells = %#v, want %#v", got, w)
	}
}
