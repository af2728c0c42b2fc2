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
	gkNode      = schema.GroupKind{Kind: "Node"}
	gkEndpoints = schema.GroupKind{Kind: "Endpoints"}
	gkEvent     = schema.GroupKind{Kind: "Event"}
)

// registry maps each kind to its printer, as pkg/registry/kinds wires
// the kinds it serves (and DaemonSets and StatefulSets, which it does not
// serve yet).
var registry = map[schema.GroupKind]Printer{
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
	}{} {
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
