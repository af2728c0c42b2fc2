package integration

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The resource.k8s.io/v1 (dynamic resource allocation) API is served:
// classes, claims and their templates, slices and taint rules, with
// their status subresources and immutable specs.
func TestDynamicResourceAllocationAPI(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	api := c.client.ResourceV1()
	labels := map[string]string{"test": "dra"}
	if _, err := api.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", Labels: labels},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{}}}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a selector without CEL: %v, want Invalid", err)
	}
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}
	claims := api.ResourceClaims("default")
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "one", Labels: labels}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Spec.Devices.Requests[0].Name = "other"
	if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a claim's spec: %v, want Invalid", err)
	}
	claim, _ = claims.Get(ctx, "one", metav1.GetOptions{})
	claim.Status.Allocation = &resourcev1.AllocationResult{}
	if got, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil || got.Status.Allocation == nil {
		t.Errorf("allocating through status: %v, %+v", err, got)
	}
	if _, err := api.ResourceClaimTemplates("default").Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Labels: labels},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: spec}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ResourceSlices().Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-a-gpu", Labels: labels},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("node-a"),
			Pool: resourcev1.ResourcePool{Name: "node-a", Generation: 1, ResourceSliceCount: 1}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices, err := api.ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	if err != nil || len(slices.Items) != 1 {
		t.Errorf("slices of node-a: %v, %v", err, slices)
	}
	rule, err := api.DeviceTaintRules().Create(ctx, &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "maintenance", Labels: labels},
		Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rule.Status.Conditions = []metav1.Condition{{Type: "Testing", Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()}}
	if _, err := api.DeviceTaintRules().UpdateStatus(ctx, rule, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a taint rule's status: %v", err)
	}
	if err := api.DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=dra"}); err != nil {
		t.Fatal(err)
	}
	if left, err := api.DeviceClasses().List(ctx, metav1.ListOptions{}); err != nil || len(left.Items) != 0 {
		t.Errorf("device classes after deleting the collection: %v, %v", err, left)
	}
}
