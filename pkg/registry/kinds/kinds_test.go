package kinds

import (
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// table is All, indexed as the apiserver indexes it.
var table = sync.OnceValue(func() *registry.Table {
	scheme, err := registry.NewScheme()
	if err != nil {
		panic(err)
	}
	t, err := registry.NewTable(scheme, All())
	if err != nil {
		panic(err)
	}
	return t
})

// resourceFor is the served resource whose objects have obj's Go type;
// an empty Resource (metadata checks only, no defaults) for other objects.
func resourceFor(obj runtime.Object) *registry.Resource {
	if obj != nil {
		for _, r := range table().All {
			if reflect.TypeOf(r.New()) == reflect.TypeOf(obj) {
				return r
			}
		}
	}
	return &registry.Resource{}
}

// defaultObject applies obj's defaults as the apiserver does.
func defaultObject(obj runtime.Object) { resourceFor(obj).ApplyDefaults(obj) }

// validate checks obj as the apiserver does on create, with the scope the
// test asks for.
func validate(obj runtime.Object, namespaced bool) field.ErrorList {
	r := *resourceFor(obj)
	r.Namespaced = namespaced
	return r.ValidateCreate(obj)
}

// validateUpdate checks an update of old to obj as the apiserver does.
func validateUpdate(obj, old runtime.Object, namespaced bool) field.ErrorList {
	r := *resourceFor(obj)
	r.Namespaced = namespaced
	return r.ValidateChange(obj, old)
}

var (
	now     = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	created = metav1.NewTime(now.Add(-10 * time.Minute))
)

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: created}
}

// unservedPrinters are the printers of kinds minik8s does not serve yet.
var unservedPrinters = map[schema.GroupKind]printers.Printer{}

// printerOf is the printer of the resource serving gk (or of a kind not
// served yet).
func printerOf(t *testing.T, gk schema.GroupKind) printers.Printer {
	t.Helper()
	for _, r := range table().All {
		if r.GroupVersionKind().GroupKind() == gk && r.Printer.Cells != nil {
			return r.TablePrinter()
		}
	}
	if p, ok := unservedPrinters[gk]; ok {
		return p
	}
	t.Fatalf("no printer for %v", gk)
	return printers.Printer{}
}

// render renders obj with the printer of the resource serving gk and keys
// the cells by column name.
func render(t *testing.T, gk schema.GroupKind, obj runtime.Object) map[string]interface{} {
	t.Helper()
	p := printerOf(t, gk)
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

// TestEveryKindIsWired checks that every served kind validates its own
// fields and prints its own well-formed columns (Name first, but for
// Events), one cell per column even for an empty object.
func TestEveryKindIsWired(t *testing.T) {
	for _, r := range table().All {
		t.Run(r.Kind, func(t *testing.T) {
			if r.Validate == nil {
				t.Error("no Validate")
			}
			if r.Printer.Cells == nil {
				t.Fatal("no Printer")
			}
			p := r.TablePrinter()
			if err := p.Validate(); err != nil {
				t.Error(err)
			}
			if r.Kind != "Event" && p.Columns[0].Format != "name" {
				t.Errorf("first column is %q, want Name", p.Columns[0].Name)
			}
			if cells := p.Cells(r.New(), now); len(cells) != len(p.Columns) {
				t.Errorf("%d cells for %d columns", len(cells), len(p.Columns))
			}
		})
	}
}

func TestTablePrinter(t *testing.T) {
	pods, _ := table().Lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	p := pods.TablePrinter()
	p.Columns[0].Name = "changed"
	if q := pods.TablePrinter(); q.Columns[0].Name != "Name" {
		t.Error("TablePrinter must hand out a copy of the columns")
	}
	if q := (&registry.Resource{}).TablePrinter(); len(q.Columns) != 2 || q.Columns[1].Name != "Created At" {
		t.Errorf("a kind without a printer gets %+v, want printers.Default", q.Columns)
	}
}

func TestWideColumns(t *testing.T) {
	for _, tc := range []struct {
		gk           schema.GroupKind
		normal, wide []string
	}{
		{gkPod, []string{"Name", "Ready", "Status", "Restarts", "Age"}, []string{"IP", "Node", "Nominated Node", "Readiness Gates"}},
		{gkNode, []string{"Name", "Status", "Roles", "Age", "Version"}, []string{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}},
		{gkEvent, []string{"Last Seen", "Type", "Reason", "Object", "Message"}, []string{"Subobject", "Source", "First Seen", "Count", "Name"}},
		{gkService, []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"}, []string{"Selector"}},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, []string{"Name", "Ready", "Up-to-date", "Available", "Age"}, []string{"Containers", "Images", "Selector"}},
		{schema.GroupKind{Group: "batch", Kind: "Job"}, []string{"Name", "Status", "Completions", "Duration", "Age"}, []string{"Containers", "Images", "Selector"}},
		{schema.GroupKind{Group: "batch", Kind: "CronJob"}, []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"}, []string{"Containers", "Images", "Selector"}},
		{schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, []string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"}, nil},
		{gkRole, []string{"Name", "Created At"}, nil},
		{gkClusterRole, []string{"Name", "Created At"}, nil},
		{gkRoleBinding, []string{"Name", "Role", "Age"}, []string{"Users", "Groups", "ServiceAccounts"}},
		{gkClusterRoleBinding, []string{"Name", "Role", "Age"}, []string{"Users", "Groups", "ServiceAccounts"}},
	} {
		var normal, wide []string
		for _, c := range printerOf(t, tc.gk).Columns {
			if c.Priority == 0 {
				normal = append(normal, c.Name)
			} else {
				wide = append(wide, c.Name)
			}
		}
		if !reflect.DeepEqual(normal, tc.normal) || !reflect.DeepEqual(wide, tc.wide) {
			t.Errorf("%v: columns %v wide %v, want %v wide %v", tc.gk, normal, wide, tc.normal, tc.wide)
		}
	}
}
