package kinds

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func TestDefaultFunction(t *testing.T) {
	fn := defaulted(&minik8sv1.Function{ObjectMeta: nsMeta("greet"),
		Spec: minik8sv1.FunctionSpec{Runtime: "python3", Source: minik8sv1.FunctionSource{Inline: "def handle(e): return e"}}})
	s := fn.Spec
	if s.Handler != "main.handle" || *s.Scale.MinScale != 0 || *s.Scale.MaxScale != 10 || *s.Scale.Target != 4 ||
		s.Scale.ScaleToZeroAfter.Duration != 30*time.Second || s.Timeout.Duration != time.Minute {
		t.Errorf("defaults: %+v %+v", s, s.Scale)
	}
	// maxScale follows a minScale above its default.
	big := defaulted(&minik8sv1.Function{ObjectMeta: nsMeta("big"), Spec: minik8sv1.FunctionSpec{Runtime: "python3",
		Source: minik8sv1.FunctionSource{Inline: "x"}, Scale: minik8sv1.FunctionScale{MinScale: ptr.To[int32](12)}}})
	if *big.Spec.Scale.MaxScale != 12 {
		t.Errorf("maxScale = %d, want 12", *big.Spec.Scale.MaxScale)
	}
}

func TestValidateFunction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.Function)
		field  string // "" when valid
	}{
		{name: "valid", mutate: func(*minik8sv1.Function) {}},
		{name: "configMap source", mutate: func(f *minik8sv1.Function) {
			f.Spec.Source = minik8sv1.FunctionSource{ConfigMap: &minik8sv1.FunctionSourceConfigMap{Name: "fn-greet-source"}}
		}},
		{name: "runtime missing", mutate: func(f *minik8sv1.Function) { f.Spec.Runtime = "" }, field: "spec.runtime"},
		{name: "runtime unknown", mutate: func(f *minik8sv1.Function) { f.Spec.Runtime = "node18" }, field: "spec.runtime"},
		{name: "handler without module", mutate: func(f *minik8sv1.Function) { f.Spec.Handler = "handle" }, field: "spec.handler"},
		{name: "handler not an identifier", mutate: func(f *minik8sv1.Function) { f.Spec.Handler = "main.1x" }, field: "spec.handler"},
		{name: "no source", mutate: func(f *minik8sv1.Function) { f.Spec.Source = minik8sv1.FunctionSource{} }, field: "spec.source"},
		{name: "both sources", mutate: func(f *minik8sv1.Function) {
			f.Spec.Source.ConfigMap = &minik8sv1.FunctionSourceConfigMap{Name: "x"}
		}, field: "spec.source.configMap"},
		{name: "inline too long", mutate: func(f *minik8sv1.Function) { f.Spec.Source.Inline = strings.Repeat("#", 3<<20) }, field: "spec.source.inline"},
		{name: "min over max", mutate: func(f *minik8sv1.Function) { f.Spec.Scale.MinScale = ptr.To[int32](11) }, field: "spec.scale.minScale"},
		{name: "max zero", mutate: func(f *minik8sv1.Function) { f.Spec.Scale.MaxScale = ptr.To[int32](0) }, field: "spec.scale.maxScale"},
		{name: "target zero", mutate: func(f *minik8sv1.Function) { f.Spec.Scale.Target = ptr.To[int32](0) }, field: "spec.scale.target"},
		{name: "negative idle", mutate: func(f *minik8sv1.Function) {
			f.Spec.Scale.ScaleToZeroAfter = &metav1.Duration{Duration: -time.Second}
		}, field: "spec.scale.scaleToZeroAfter"},
		{name: "zero timeout", mutate: func(f *minik8sv1.Function) { f.Spec.Timeout = &metav1.Duration{} }, field: "spec.timeout"},
		{name: "bad env name", mutate: func(f *minik8sv1.Function) { f.Spec.Env = []corev1.EnvVar{{Name: "A=B", Value: "x"}} }, field: "spec.env[0].name"},
		{name: "request over limit", mutate: func(f *minik8sv1.Function) {
			f.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		}, field: "spec.resources.requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := defaulted(&minik8sv1.Function{ObjectMeta: nsMeta("greet"), Spec: minik8sv1.FunctionSpec{Runtime: "python3",
				Source: minik8sv1.FunctionSource{Inline: "def handle(e):\n    return e\n"}}})
			tc.mutate(fn)
			errs := validate(fn, true)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			found := false
			for _, e := range errs {
				found = found || strings.HasPrefix(e.Field, tc.field)
			}
			if !found {
				t.Errorf("want an error on %s, got %v", tc.field, errs)
			}
		})
	}
}
