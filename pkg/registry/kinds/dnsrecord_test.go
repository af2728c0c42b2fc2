package kinds

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func TestDefaultDNSRecord(t *testing.T) {
	for _, tc := range []struct {
		name        string
		paths, want []string
	}{
		{name: "leading slash kept", paths: []string{"/path1", "/"}, want: []string{"/path1", "/"}},
		{name: "leading slash added", paths: []string{"path1", "a/b/"}, want: []string{"/path1", "/a/b/"}},
		{name: "empty left for validation", paths: []string{""}, want: []string{""}},
		{name: "no paths", paths: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &minik8sv1.DNSRecord{Spec: minik8sv1.DNSRecordSpec{Host: "minik8s.com"}}
			for _, p := range tc.paths {
				r.Spec.Paths = append(r.Spec.Paths, minik8sv1.DNSRecordPath{Path: p, Service: "svc", Port: intstr.FromInt32(80)})
			}
			defaultObject(r)
			var got []string
			for _, p := range r.Spec.Paths {
				got = append(got, p.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("paths = %q, want %q", got, tc.want)
			}
			if r.Spec.Host != "minik8s.com" {
				t.Errorf("host changed to %q", r.Spec.Host)
			}
			again := r.DeepCopy()
			defaultObject(again)
			if !equality.Semantic.DeepEqual(r, again) {
				t.Errorf("not idempotent: %+v then %+v", r.Spec, again.Spec)
			}
		})
	}
}

func validDNSRecord() *minik8sv1.DNSRecord {
	return defaulted(&minik8sv1.DNSRecord{
		ObjectMeta: nsMeta("site"),
		Spec: minik8sv1.DNSRecordSpec{Host: "minik8s.com", Paths: []minik8sv1.DNSRecordPath{
			{Path: "/path1", Service: "svc-a", Port: intstr.FromInt32(80)},
			{Path: "/path2", Service: "svc-b", Port: intstr.FromString("http")},
		}},
	})
}

func withPath(f func(p *minik8sv1.DNSRecordPath)) func(*minik8sv1.DNSRecord) {
	return func(r *minik8sv1.DNSRecord) { f(&r.Spec.Paths[0]) }
}

func readyCondition() metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured", LastTransitionTime: metav1.Now()}
}

// TestValidateDNSRecord lists, per input, exactly the errors expected
// ("field: type"): nothing more may be reported.
func TestValidateDNSRecord(t *testing.T) {
	p0 := "spec.paths[0]"
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.DNSRecord)
		want   []string
	}{
		{name: "valid"},
		{name: "root path", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "/" })},
		{name: "path of every allowed character", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "/a-Z_0.9~/x/" })},
		{name: "single-label host", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "intranet" }},
		{name: "max port by number", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromInt32(65535) })},
		{name: "status set by the gateway", mutate: func(r *minik8sv1.DNSRecord) {
			r.Status = minik8sv1.DNSRecordStatus{Address: "10.96.0.20", ObservedGeneration: 1, Conditions: []metav1.Condition{readyCondition()}}
		}},

		{name: "no host", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "" }, want: []string{"spec.host: Required value"}},
		{name: "uppercase host", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "Minik8s.com" }, want: []string{"spec.host: Invalid value"}},
		{name: "wildcard host", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "*.minik8s.com" }, want: []string{"spec.host: Invalid value"}},
		{name: "IP host", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "10.0.0.1" }, want: []string{"spec.host: Invalid value"}},
		{name: "host with a port", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "minik8s.com:80" }, want: []string{"spec.host: Invalid value"}},
		{name: "host with an underscore", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Host = "my_site.com" }, want: []string{"spec.host: Invalid value"}},

		{name: "no paths", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Paths = nil }, want: []string{"spec.paths: Required value"}},
		{name: "empty path", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "" }), want: []string{p0 + ".path: Required value"}},
		{name: "relative path not defaulted", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "path1" }), want: []string{p0 + ".path: Invalid value"}},
		{name: "duplicate path", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Paths[1].Path = "/path1" }, want: []string{"spec.paths[1].path: Duplicate value"}},
		{name: "duplicate path but for a trailing slash", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Paths[1].Path = "/path1/" }, want: []string{"spec.paths[1].path: Duplicate value"}},
		{name: "root and a path", mutate: func(r *minik8sv1.DNSRecord) { r.Spec.Paths[1].Path = "/" }},
		{name: "double slash", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "/a//b" }), want: []string{p0 + ".path: Invalid value"}},
		{name: "dot-dot segment", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Path = "/a/../b" }), want: []string{p0 + ".path: Invalid value"}},
		{name: "service missing", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Service = "" }), want: []string{p0 + ".service: Required value"}},
		{name: "service not a DNS-1035 label", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Service = "1svc" }), want: []string{p0 + ".service: Invalid value"}},
		{name: "service with a dot", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Service = "svc.other" }), want: []string{p0 + ".service: Invalid value"}},
		{name: "port 0", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromInt32(0) }), want: []string{p0 + ".port: Required value"}},
		{name: "empty port name", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromString("") }), want: []string{p0 + ".port: Required value"}},
		{name: "port too big", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromInt32(65536) }), want: []string{p0 + ".port: Invalid value"}},
		{name: "negative port", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromInt32(-1) }), want: []string{p0 + ".port: Invalid value"}},
		{name: "port number as a string", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromString("80") }), want: []string{p0 + ".port: Invalid value"}},
		{name: "port name too long", mutate: withPath(func(p *minik8sv1.DNSRecordPath) { p.Port = intstr.FromString("a-very-long-name") }), want: []string{p0 + ".port: Invalid value"}},

		{name: "status address not an IP", mutate: func(r *minik8sv1.DNSRecord) { r.Status.Address = "gateway" }, want: []string{"status.address: Invalid value"}},
		{name: "status negative generation", mutate: func(r *minik8sv1.DNSRecord) { r.Status.ObservedGeneration = -1 }, want: []string{"status.observedGeneration: Invalid value"}},
		{name: "status condition without reason", mutate: func(r *minik8sv1.DNSRecord) {
			c := readyCondition()
			c.Reason = ""
			r.Status.Conditions = []metav1.Condition{c}
		}, want: []string{"status.conditions[0].reason: Required value"}},
		{name: "name not a DNS subdomain", mutate: func(r *minik8sv1.DNSRecord) { r.Name = "My_Site" }, want: []string{"metadata.name: Invalid value"}},
		{name: "everything wrong at once", mutate: func(r *minik8sv1.DNSRecord) {
			r.Spec.Host = "UPPER"
			r.Spec.Paths = []minik8sv1.DNSRecordPath{{Path: "/a;b"}}
		}, want: []string{"spec.host: Invalid value", p0 + ".path: Invalid value", p0 + ".service: Required value", p0 + ".port: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validDNSRecord()
			if tc.mutate != nil {
				tc.mutate(r)
			}
			checkExactErrors(t, validate(r, true), tc.want)
		})
	}
}

// TestValidateDNSRecordPathInjection: nothing that could end or extend an
// nginx directive gets into a path.
func TestValidateDNSRecordPathInjection(t *testing.T) {
	for _, path := range []string{
		"/a;b", "/a b", "/a\tb", "/a\nb", "/a{", "/a}", `/a"b`, "/a'b", "/a`b", "/$host", "/a#b", `/a\b`,
		"/a?b", "/a%2fb", "/a*", "/a&b", "/a|b", "/a<b>", "/a(b)", "/a,b", "/a=b", "/a@b", "/a+b", "/a!b", "/ä",
		"/a;}\nserver{listen 80;}#",
	} {
		t.Run(strings.ReplaceAll(path, "\n", `\n`), func(t *testing.T) {
			r := validDNSRecord()
			r.Spec.Paths[0].Path = path
			checkExactErrors(t, validate(r, true), []string{"spec.paths[0].path: Invalid value"})
		})
	}
}

func TestValidateDNSRecordUpdate(t *testing.T) {
	old := validDNSRecord()
	old.ResourceVersion = "5"
	moved := mutate(old, func(r *minik8sv1.DNSRecord) {
		r.Spec.Host = "other.minik8s.com"
		r.Spec.Paths = r.Spec.Paths[:1]
	})
	checkExactErrors(t, validateUpdate(moved, old, true), nil)
	bad := mutate(old, func(r *minik8sv1.DNSRecord) { r.Spec.Paths[0].Port = intstr.FromInt32(0) })
	checkExactErrors(t, validateUpdate(bad, old, true), []string{"spec.paths[0].port: Required value"})
}

// checkExactErrors wants one error per "field: type" in want, and no other.
func checkExactErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Type.String())
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q\n%s", got, want, errs.ToAggregate())
	}
}

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
