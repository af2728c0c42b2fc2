package v1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func record() *minik8sv1.DNSRecord {
	return &minik8sv1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: minik8sv1.DNSRecordSpec{Host: "minik8s.com", Paths: []minik8sv1.DNSRecordPath{
			{Path: "/path1", Service: "a", Port: intstr.FromInt32(80)},
			{Path: "/path2", Service: "b", Port: intstr.FromString("http")},
		}},
		Status: minik8sv1.DNSRecordStatus{Address: "10.96.0.20", ObservedGeneration: 1, Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured", LastTransitionTime: metav1.Now()},
		}},
	}
}

// TestDeepCopy: a copy shares no slice, map or condition with the original.
func TestDeepCopy(t *testing.T) {
	orig := record()
	c := orig.DeepCopy()
	if !equality.Semantic.DeepEqual(orig, c) {
		t.Fatalf("copy differs: %+v", c)
	}
	c.Labels["a"] = "x"
	c.Spec.Paths[0].Path = "/changed"
	c.Spec.Paths[1].Port = intstr.FromInt32(1)
	c.Status.Conditions[0].Reason = "Changed"
	c.Status.Conditions[0].LastTransitionTime.Time = c.Status.Conditions[0].LastTransitionTime.AddDate(1, 0, 0)
	if orig.Labels["a"] != "b" || orig.Spec.Paths[0].Path != "/path1" || orig.Spec.Paths[1].Port != intstr.FromString("http") ||
		orig.Status.Conditions[0].Reason != "Configured" || orig.Status.Conditions[0].LastTransitionTime.Equal(&c.Status.Conditions[0].LastTransitionTime) {
		t.Fatalf("changing the copy changed the original: %+v", orig)
	}

	list := &minik8sv1.DNSRecordList{Items: []minik8sv1.DNSRecord{*record()}}
	lc := list.DeepCopyObject().(*minik8sv1.DNSRecordList)
	lc.Items[0].Spec.Paths[0].Service = "z"
	if list.Items[0].Spec.Paths[0].Service != "a" {
		t.Fatal("changing the list copy changed the original")
	}
	var nilRecord *minik8sv1.DNSRecord
	if nilRecord.DeepCopy() != nil {
		t.Fatal("DeepCopy of nil is not nil")
	}
}

// TestScheme: AddToScheme makes the kinds decodable by apiVersion and kind,
// ports by number and by name included.
func TestScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := minik8sv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"DNSRecord", "DNSRecordList", "ListOptions", "DeleteOptions"} {
		if !scheme.Recognizes(minik8sv1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
	codecs := serializer.NewCodecFactory(scheme)
	data := []byte(`{"apiVersion":"minik8s.io/v1","kind":"DNSRecord","metadata":{"name":"site"},
		"spec":{"host":"minik8s.com","paths":[{"path":"/path1","service":"a","port":80},{"path":"/path2","service":"b","port":"http"}]}}`)
	obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := obj.(*minik8sv1.DNSRecord)
	if !ok || gvk.Kind != "DNSRecord" || gvk.Group != minik8sv1.GroupName {
		t.Fatalf("decoded %T as %v", obj, gvk)
	}
	if r.Spec.Paths[0].Port != intstr.FromInt32(80) || r.Spec.Paths[1].Port != intstr.FromString("http") {
		t.Fatalf("ports: %+v", r.Spec.Paths)
	}
	if gr := minik8sv1.Resource("dnsrecords"); gr.String() != "dnsrecords.minik8s.io" {
		t.Errorf("Resource = %v", gr)
	}
}
