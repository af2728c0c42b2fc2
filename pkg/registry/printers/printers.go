package printers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Printer renders one kind as table rows.
type Printer struct {
	Columns []metav1.TableColumnDefinition                        // first column is "Name" (Type "string", Format "name")
	Cells   func(obj runtime.Object, now time.Time) []interface{} // one cell per column, same order
}

// columnTypes are the types a table column may have.
var columnTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "date": true}

// Validate reports what is wrong with p's columns: a type a table does not
// have, no description, a priority other than 0 and 1 (-o wide), a name
// twice, or other than one name column ("Name", a string).
func (p Printer) Validate() error {
	var errs []error
	names, seen := 0, map[string]bool{}
	for _, c := range p.Columns {
		if !columnTypes[c.Type] {
			errs = append(errs, fmt.Errorf("column %q: bad type %q", c.Name, c.Type))
		}
		if c.Description == "" {
			errs = append(errs, fmt.Errorf("column %q: no description", c.Name))
		}
		if c.Priority != 0 && c.Priority != 1 {
			errs = append(errs, fmt.Errorf("column %q: priority %d", c.Name, c.Priority))
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("duplicate column %q", c.Name))
		}
		seen[c.Name] = true
		if c.Format == "name" {
			names++
			if c.Name != "Name" || c.Type != "string" {
				errs = append(errs, fmt.Errorf("name column is %q/%q", c.Name, c.Type))
			}
		}
	}
	if names != 1 {
		errs = append(errs, fmt.Errorf("%d name columns, want 1", names))
	}
	return errors.Join(errs...)
}

// Default is the printer for kinds with no specific one. Like the apiserver's
// default table convertor it shows the name and the creation time as an
// RFC 3339 UTC timestamp.
var Default = Printer{
	Columns: []metav1.TableColumnDefinition{
		NameColumn(),
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	},
	Cells: func(obj runtime.Object, _ time.Time) []interface{} {
		m, err := meta.Accessor(obj)
		if err != nil {
			return []interface{}{"", ""}
		}
		return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

// Typed builds a Printer from a function over one concrete API type. Objects
// of that type are passed straight through; unstructured objects are converted
// first. Anything else yields a row with only the name filled in.
func Typed[T any, P interface {
	*T
	runtime.Object
}](columns []metav1.TableColumnDefinition, cells func(P, time.Time) []interface{}) Printer {
	return Printer{
		Columns: columns,
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			if o, ok := obj.(P); ok && o != nil {
				return cells(o, now)
			}
			if u, ok := obj.(runtime.Unstructured); ok {
				o := P(new(T))
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), o); err == nil {
					return cells(o, now)
				}
			}
			return nameOnlyCells(columns, obj)
		},
	}
}

// nameOnlyCells is the row for an object a printer cannot read: the name in
// the name column, nil (rendered "<none>" by kubectl) elsewhere.
func nameOnlyCells(columns []metav1.TableColumnDefinition, obj runtime.Object) []interface{} {
	cells := make([]interface{}, len(columns))
	m, err := meta.Accessor(obj)
	if err != nil {
		return cells
	}
	for i, c := range columns {
		if c.Format == "name" {
			cells[i] = m.GetName()
		}
	}
	return cells
}

// Column helpers.

var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// NameColumn is the NAME column every printer starts with.
func NameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
}

// AgeColumn is the AGE column, from metadata.creationTimestamp.
func AgeColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
}

// Column is a column named name of the given type.
func Column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wide marks a column as shown only with -o wide.
func Wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

// templateColumns are the wide CONTAINERS, IMAGES and SELECTOR columns that
// workload controllers share.
func TemplateColumns(selectorDescription string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		Wide(Column("Containers", "string", "Names of each container in the template.")),
		Wide(Column("Images", "string", "Images referenced by each container in the template.")),
		Wide(Column("Selector", "string", selectorDescription)),
	}
}

// Cell helpers.

// What a cell shows for nothing, a value not known yet, and an unset flag.
const (
	None    = "<none>"
	Unknown = "<unknown>"
	Unset   = "<unset>"
)

// Age renders how long ago t was, "<unknown>" when t is unset.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return Unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func MicroAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return Unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// containerCells joins container names and images with commas.
func ContainerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// OrDefault is s, or def when s is empty.
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func DerefInt32(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func BoolPtrCell(b *bool) string {
	switch {
	case b == nil:
		return Unset
	case *b:
		return "True"
	default:
		return "False"
	}
}

// TruncatedList joins items with sep; past max items it appends " + N more...".
// An empty list renders as empty.
func TruncatedList(items []string, max int, sep string) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:max], sep) + " + " + strconv.Itoa(len(items)-max) + " more..."
}
