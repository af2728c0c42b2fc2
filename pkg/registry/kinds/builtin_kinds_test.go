package kinds

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func cluster(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func TestValidateBuiltinKinds(t *testing.T) {
	driver := defaulted(&storagev1.CSIDriver{ObjectMeta: cluster("csi.example.com")})
	csiNode := &storagev1.CSINode{ObjectMeta: cluster("node-1"), Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: "n1", TopologyKeys: []string{"example.com/zone"}}}}}
	capacity := &storagev1.CSIStorageCapacity{ObjectMeta: nsMeta("cap"), StorageClassName: "fast", Capacity: ptr.To(resource.MustParse("1Gi"))}
	va := &storagev1.VolumeAttachment{ObjectMeta: cluster("va"), Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}}}
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: cluster("gold"), DriverName: "csi.example.com", Parameters: map[string]string{"iops": "1"}}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: cluster("extra"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24", "fd00::/64"}}}
	ip := &networkingv1.IPAddress{ObjectMeta: cluster("10.0.0.1"), Spec: networkingv1.IPAddressSpec{
		ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}}
	fs := defaulted(MandatoryFlowSchemas()[1])
	pl := defaulted(&flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: cluster("tenant"), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}}})
	svm := &storagemigrationv1.StorageVersionMigration{ObjectMeta: cluster("m"), Spec: storagemigrationv1.StorageVersionMigrationSpec{
		Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}}
	cond := func(t storagemigrationv1.MigrationConditionType) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()}
	}
	var cases []createCase
	for _, obj := range []runtime.Object{driver, csiNode, va, vac, cidr, ip, fs, pl, svm} {
		cases = append(cases, createCase{name: "valid " + resourceFor(obj).Kind, obj: obj})
	}
	for _, m := range MandatoryFlowSchemas() {
		cases = append(cases, createCase{name: "mandatory " + m.Name, obj: defaulted(m)})
	}
	for _, m := range MandatoryPriorityLevelConfigurations() {
		cases = append(cases, createCase{name: "mandatory level " + m.Name, obj: defaulted(m)})
	}
	cases = append(cases, []createCase{
		{name: "capacity", obj: capacity, namespaced: true},
		{name: "trust bundle", obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster("roots"), Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: "x"}},
			want: []string{"spec.trustBundle: at least one trust anchor must be provided"}},
		{name: "trust bundle wrong block", obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster("roots"), Spec: certificatesv1.ClusterTrustBundleSpec{
			TrustBundle: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}, want: []string{"spec.trustBundle: entry 0 has bad block type: PRIVATE KEY"}},
		{name: "trust bundle not named after its signer", obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster("roots"), Spec: certificatesv1.ClusterTrustBundleSpec{
			SignerName: "example.com/s", TrustBundle: "x"}}, want: []string{"metadata.name: must be named with prefix example.com:s:"}},
		{name: "trust bundle bad signer", obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster("nodomain:roots"), Spec: certificatesv1.ClusterTrustBundleSpec{
			SignerName: "nodomain", TrustBundle: "x"}}, want: []string{"spec.signerName"}},
		{name: "trust bundle colon without signer", obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster("a:b")}, want: []string{`metadata.name: must not have ":"`}},
		{name: "csi driver short token", obj: mutate(driver, func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}, {Audience: "a"}}
		}), want: []string{"spec.tokenRequests[0].expirationSeconds", "spec.tokenRequests[1].audience: Duplicate value"}},
		{name: "csi driver bad mode", obj: mutate(driver, func(d *storagev1.CSIDriver) {
			d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Sometimes"}
			d.Spec.FSGroupPolicy = ptr.To[storagev1.FSGroupPolicy]("Always")
		}), want: []string{"spec.volumeLifecycleModes: Unsupported value", "spec.fsGroupPolicy: Unsupported value"}},
		{name: "csi driver unset", obj: &storagev1.CSIDriver{ObjectMeta: cluster("d")}, want: []string{"spec.attachedRequired: Required value", "spec.podInfoOnMount: Required value"}},
		{name: "csi node duplicate driver", obj: mutate(csiNode, func(n *storagev1.CSINode) {
			n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: "csi.example.com"})
		}), want: []string{"spec.drivers[1].name: Duplicate value", "spec.drivers[1].nodeID: Required value"}},
		{name: "capacity bad class", obj: mutate(capacity, func(c *storagev1.CSIStorageCapacity) {
			c.StorageClassName = "Fast!"
			c.Capacity = ptr.To(resource.MustParse("-1"))
		}), namespaced: true, want: []string{"storageClassName: Invalid value", "capacity: must be greater than or equal to 0"}},
		{name: "attachment without source", obj: mutate(va, func(v *storagev1.VolumeAttachment) {
			v.Spec.Source = storagev1.VolumeAttachmentSource{}
			v.Spec.Attacher, v.Spec.NodeName = "", ""
		}), want: []string{"spec.source: Required value", "spec.attacher: Required value", "spec.nodeName: Required value"}},
		{name: "attributes class without parameters", obj: mutate(vac, func(c *storagev1.VolumeAttributesClass) { c.Parameters, c.DriverName = nil, "" }),
			want: []string{"parameters: Required value", "driverName: Required value"}},
		{name: "service cidr same family", obj: mutate(cidr, func(c *networkingv1.ServiceCIDR) { c.Spec.CIDRs = []string{"10.0.0.0/8", "10.1.0.0/16"} }),
			want: []string{"spec.cidrs: may specify no more than one IP for each IP family"}},
		{name: "service cidr not a cidr", obj: mutate(cidr, func(c *networkingv1.ServiceCIDR) { c.Spec.CIDRs = []string{"10.0.0.1/8"} }),
			want: []string{"spec.cidrs[0]: must be in canonical form"}},
		{name: "service cidr none", obj: mutate(cidr, func(c *networkingv1.ServiceCIDR) { c.Spec.CIDRs = nil }), want: []string{"spec.cidrs: Required value"}},
		{name: "ip not canonical", obj: mutate(ip, func(a *networkingv1.IPAddress) { a.Name = "2001:db8:0::1" }), want: []string{"metadata.name: must be in canonical form"}},
		{name: "ip without parent", obj: mutate(ip, func(a *networkingv1.IPAddress) { a.Spec.ParentRef = nil }), want: []string{"spec.parentRef: Required value"}},
		{name: "flow schema precedence 1", obj: mutate(fs, func(f *flowcontrolv1.FlowSchema) { f.Spec.MatchingPrecedence = 1 }),
			want: []string{"spec.matchingPrecedence: only the schema named 'exempt' may have matchingPrecedence 1"}},
		{name: "flow schema rules", obj: mutate(fs, func(f *flowcontrolv1.FlowSchema) {
			f.Spec.MatchingPrecedence = 20000
			f.Spec.Rules[0].Subjects = nil
			f.Spec.Rules[0].ResourceRules[0].Verbs = []string{"get", "*"}
			f.Spec.Rules[0].ResourceRules[0].Namespaces, f.Spec.Rules[0].ResourceRules[0].ClusterScope = nil, false
			f.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"healthz"}
			f.Spec.PriorityLevelConfiguration.Name = ""
		}), want: []string{"spec.matchingPrecedence", "spec.rules[0].subjects: Required value", "spec.rules[0].resourceRules[0].verbs",
			"spec.rules[0].resourceRules[0].namespaces: Required value", "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: must start with slash",
			"spec.priorityLevelConfiguration.name: Required value"}},
		{name: "priority level hand bigger than queues", obj: mutate(pl, func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec.Limited.LimitResponse.Queuing.HandSize = 100
		}), want: []string{"spec.limited.limitResponse.queuing.handSize: should not be greater than queues (64)"}},
		{name: "priority level named exempt", obj: mutate(pl, func(p *flowcontrolv1.PriorityLevelConfiguration) { p.Name = "exempt" }),
			want: []string{"spec.type: type must be 'Exempt' if and only if name is 'exempt'"}},
		{name: "priority level limited missing", obj: mutate(pl, func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec.Limited = nil
			p.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{LendablePercent: ptr.To[int32](101)}
		}), want: []string{"spec.limited: Required value", "spec.exempt: Forbidden"}},
		{name: "migration without resource", obj: mutate(svm, func(m *storagemigrationv1.StorageVersionMigration) { m.Spec.Resource.Resource = "" }),
			want: []string{"spec.resource.resource: Required value"}},
		{name: "migration succeeded and failed", obj: mutate(svm, func(m *storagemigrationv1.StorageVersionMigration) {
			m.Status.Conditions = []metav1.Condition{cond(storagemigrationv1.MigrationSucceeded), cond(storagemigrationv1.MigrationFailed)}
		}), want: []string{"status.conditions: Both success and failed conditions cannot be true at the same time"}},
	}...)
	runCreateCases(t, cases)
}

func TestValidateBuiltinKindUpdates(t *testing.T) {
	driver := defaulted(&storagev1.CSIDriver{ObjectMeta: cluster("csi.example.com")})
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: cluster("gold"), DriverName: "csi.example.com", Parameters: map[string]string{"iops": "1"}}
	va := &storagev1.VolumeAttachment{ObjectMeta: cluster("va"), Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}}}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: cluster("extra"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}
	svm := &storagemigrationv1.StorageVersionMigration{ObjectMeta: cluster("m"), Spec: storagemigrationv1.StorageVersionMigrationSpec{
		Resource: metav1.GroupResource{Resource: "secrets"}}, Status: storagemigrationv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{{
		Type: "Succeeded", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()}}}}
	for _, tc := range []struct {
		name     string
		obj, old runtime.Object
		want     []string
	}{
		{"csi driver attachRequired", mutate(driver, func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = ptr.To(false) }), driver, []string{"spec.attachedRequired: field is immutable"}},
		{"csi driver podInfoOnMount may change", mutate(driver, func(d *storagev1.CSIDriver) { d.Spec.PodInfoOnMount = ptr.To(true) }), driver, nil},
		{"attributes class driver", mutate(vac, func(c *storagev1.VolumeAttributesClass) { c.DriverName = "other.example.com" }), vac, []string{"driverName: updates to driverName are forbidden."}},
		{"attributes class parameters", mutate(vac, func(c *storagev1.VolumeAttributesClass) { c.Parameters["iops"] = "2" }), vac, []string{"parameters: updates to parameters are forbidden."}},
		{"attachment spec", mutate(va, func(v *storagev1.VolumeAttachment) { v.Spec.NodeName = "node-2" }), va, []string{"spec: field is immutable"}},
		{"attachment status may change", mutate(va, func(v *storagev1.VolumeAttachment) { v.Status.Attached = true }), va, nil},
		{"service cidr becomes dual-stack", mutate(cidr, func(c *networkingv1.ServiceCIDR) { c.Spec.CIDRs = append(c.Spec.CIDRs, "fd00::/64") }), cidr, nil},
		{"service cidr changes", mutate(cidr, func(c *networkingv1.ServiceCIDR) { c.Spec.CIDRs = []string{"10.201.0.0/24"} }), cidr, []string{"spec.cidrs: field is immutable"}},
		{"migration spec", mutate(svm, func(m *storagemigrationv1.StorageVersionMigration) { m.Spec.Resource.Resource = "configmaps" }), svm, []string{"spec: field is immutable"}},
		{"migration un-succeeds", mutate(svm, func(m *storagemigrationv1.StorageVersionMigration) {
			m.Status.Conditions[0].Status = metav1.ConditionFalse
		}), svm,
			[]string{"status.conditions: Success condition cannot be set to false once it is true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, old := tc.obj.DeepCopyObject(), tc.old.DeepCopyObject()
			for _, o := range []runtime.Object{obj, old} {
				m, _ := apimeta.Accessor(o)
				m.SetResourceVersion("1")
			}
			checkErrors(t, validateUpdate(obj, old, false), tc.want)
		})
	}
}

func TestBuiltinKindCells(t *testing.T) {
	runCellCases(t, []cellCase{
		{name: "csi driver", gk: schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIDriver"}, obj: defaulted(&storagev1.CSIDriver{ObjectMeta: objMeta("csi.example.com")}),
			want: map[string]interface{}{"AttachRequired": true, "PodInfoOnMount": false, "TokenRequests": "<unset>", "Modes": "Persistent", "Age": "10m"}},
		{name: "csi storage capacity", gk: schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"},
			obj: &storagev1.CSIStorageCapacity{ObjectMeta: objMeta("c"), StorageClassName: "fast"}, want: map[string]interface{}{"StorageClassName": "fast", "Capacity": "<unset>"}},
		{name: "volume attachment", gk: schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttachment"}, obj: &storagev1.VolumeAttachment{ObjectMeta: objMeta("va"),
			Spec:   storagev1.VolumeAttachmentSpec{Attacher: "csi", NodeName: "n", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv")}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true}}, want: map[string]interface{}{"Attacher": "csi", "PV": "pv", "Node": "n", "Attached": true}},
		{name: "ip address", gk: schema.GroupKind{Group: "networking.k8s.io", Kind: "IPAddress"}, obj: &networkingv1.IPAddress{ObjectMeta: objMeta("10.0.0.1"),
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}},
			want: map[string]interface{}{"ParentRef": "services/default/web"}},
		{name: "flow schema", gk: schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}, obj: MandatoryFlowSchemas()[1],
			want: map[string]interface{}{"PriorityLevel": "catch-all", "MatchingPrecedence": int64(10000), "DistinguisherMethod": "ByUser", "MissingPL": "?"}},
		{name: "priority level", gk: schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}, obj: MandatoryPriorityLevelConfigurations()[1],
			want: map[string]interface{}{"Type": "Limited", "NominalConcurrencyShares": int64(5), "Queues": "<none>"}},
		{name: "migration", gk: schema.GroupKind{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}, obj: &storagemigrationv1.StorageVersionMigration{
			ObjectMeta: objMeta("m"), Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}},
			want: map[string]interface{}{"Resource": "deployments.apps"}},
	})
}
