package defaults

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

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
			Default(r)
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
			Default(again)
			if !equality.Semantic.DeepEqual(r, again) {
				t.Errorf("not idempotent: %+v then %+v", r.Spec, again.Spec)
			}
		})
	}
}
