package printers

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// registry holds the printers this package defines for kinds
// pkg/registry/kinds does not serve yet; the served kinds' printers are
// tested with their kinds.
var registry = map[schema.GroupKind]Printer{}

// zeroObjects holds an empty object of every kind with a printer.
var zeroObjects = map[schema.GroupKind]runtime.Object{}

// TestColumnDefinitions checks every printer's columns are well formed and
// that it renders exactly one cell per column even for an empty object.
func TestColumnDefinitions(t *testing.T) {
	if len(zeroObjects) != len(registry) {
		t.Errorf("zeroObjects covers %d kinds, registry has %d", len(zeroObjects), len(registry))
	}
	check := func(t *testing.T, p Printer) {
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
	}
	for gk, obj := range zeroObjects {
		t.Run(gk.String(), func(t *testing.T) {
			p, ok := registry[gk]
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
