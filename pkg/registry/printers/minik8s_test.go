package printers

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func TestDNSRecordCells(t *testing.T) {
	gk := schema.GroupKind{Group: "minik8s.io", Kind: "DNSRecord"}
	record := func(address string, paths ...minik8sv1.DNSRecordPath) *minik8sv1.DNSRecord {
		return &minik8sv1.DNSRecord{ObjectMeta: objMeta("site"),
			Spec:   minik8sv1.DNSRecordSpec{Host: "minik8s.com", Paths: paths},
			Status: minik8sv1.DNSRecordStatus{Address: address}}
	}
	path := func(p, svc string, port intstr.IntOrString) minik8sv1.DNSRecordPath {
		return minik8sv1.DNSRecordPath{Path: p, Service: svc, Port: port}
	}
	var many []minik8sv1.DNSRecordPath
	for i := 1; i <= 5; i++ {
		many = append(many, path(fmt.Sprintf("/p%d", i), "s", intstr.FromInt32(80)))
	}
	runCellCases(t, []cellCase{
		{name: "two paths", gk: gk, obj: record("", path("/path1", "a", intstr.FromInt32(80)), path("/path2", "b", intstr.FromInt32(8080))),
			want: map[string]interface{}{"Name": "site", "Host": "minik8s.com", "Paths": "/path1->a:80,/path2->b:8080", "Address": "", "Age": "10m"}},
		{name: "port by name, address set", gk: gk, obj: record("10.96.0.20", path("/", "web", intstr.FromString("http"))),
			want: map[string]interface{}{"Paths": "/->web:http", "Address": "10.96.0.20"}},
		{name: "many paths truncated", gk: gk, obj: record("", many...),
			want: map[string]interface{}{"Paths": "/p1->s:80,/p2->s:80,/p3->s:80 + 2 more..."}},
		{name: "no paths", gk: gk, obj: record(""), want: map[string]interface{}{"Paths": ""}},
	})

	// What an unstructured client holds renders the same.
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "minik8s.io/v1",
		"kind":       "DNSRecord",
		"metadata":   map[string]interface{}{"name": "site", "creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec": map[string]interface{}{"host": "minik8s.com", "paths": []interface{}{
			map[string]interface{}{"path": "/path1", "service": "a", "port": int64(80)},
		}},
	}}
	if got := render(t, gk, u); got["Paths"] != "/path1->a:80" || got["Host"] != "minik8s.com" || got["Age"] != "10m" {
		t.Errorf("unstructured DNSRecord rendered as %v", got)
	}
}
