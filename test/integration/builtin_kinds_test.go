package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// builtinClient is what the test needs of a typed client-go client.
type builtinClient[T runtime.Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// exerciseKind creates good (labelled kind=test) and a second object,
// lists by the label, patches a label onto good, checks bad is refused as
// Invalid, and deletes good.
func exerciseKind[T runtime.Object, L runtime.Object](t *testing.T, c builtinClient[T, L], good, other, bad T) T {
	t.Helper()
	ctx := ctxT(t)
	created, err := c.Create(ctx, good, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := c.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the other: %v", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "kind=test"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if items, _ := meta.ExtractList(list); len(items) != 1 {
		t.Errorf("list kind=test: %d items, want 1", len(items))
	}
	name := metaOf(t, created).GetName()
	patched, err := c.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil || metaOf(t, patched).GetLabels()["patched"] != "yes" {
		t.Errorf("patch: %v", err)
	}
	if _, err := c.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("create an invalid object: %v, want Invalid", err)
	}
	return patched
}

func metaOf(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testLabels() map[string]string { return map[string]string{"kind": "test"} }

// selfSignedPEM is a PEM CERTIFICATE block of a new self-signed CA.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// The remaining built-in kinds of issue 17 are served through client-go's
// typed clients: create, list by label, patch, /status where the kind has
// it, refusal of invalid objects and immutable changes, delete, and
// kubectl get prints Kubernetes' columns.
func TestBuiltinKinds(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	labelled := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Labels: testLabels()} }
	plain := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

	t.Run("storage", func(t *testing.T) {
		s := c.client.StorageV1()
		d := exerciseKind(t, s.CSIDrivers(), &storagev1.CSIDriver{ObjectMeta: labelled("csi.example.com")},
			&storagev1.CSIDriver{ObjectMeta: plain("other.example.com")},
			&storagev1.CSIDriver{ObjectMeta: plain("bad.example.com"), Spec: storagev1.CSIDriverSpec{
				TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}}}})
		if !*d.Spec.AttachRequired || *d.Spec.PodInfoOnMount {
			t.Errorf("CSIDriver defaults: %+v", d.Spec)
		}
		d.Spec.AttachRequired = ptr.To(false)
		if _, err := s.CSIDrivers().Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing attachRequired: %v, want Invalid", err)
		}

		exerciseKind(t, s.CSINodes(), &storagev1.CSINode{ObjectMeta: labelled("node-1"), Spec: storagev1.CSINodeSpec{
			Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: "n1", TopologyKeys: []string{"topology.example.com/zone"}}}}},
			&storagev1.CSINode{ObjectMeta: plain("node-2")},
			&storagev1.CSINode{ObjectMeta: plain("node-3"), Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com"}}}})

		caps := s.CSIStorageCapacities("default")
		capacity := resource.MustParse("10Gi")
		cp := exerciseKind(t, caps, &storagev1.CSIStorageCapacity{ObjectMeta: labelled("cap-1"), StorageClassName: "fast", Capacity: &capacity},
			&storagev1.CSIStorageCapacity{ObjectMeta: plain("cap-2"), StorageClassName: "fast"},
			&storagev1.CSIStorageCapacity{ObjectMeta: plain("cap-3"), StorageClassName: "Not_A_Name"})
		cp.StorageClassName = "slow"
		if _, err := caps.Update(ctx, cp, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing storageClassName: %v, want Invalid", err)
		}

		va := exerciseKind(t, s.VolumeAttachments(), &storagev1.VolumeAttachment{ObjectMeta: labelled("va-1"), Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			&storagev1.VolumeAttachment{ObjectMeta: plain("va-2"), Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-2")}}},
			&storagev1.VolumeAttachment{ObjectMeta: plain("va-3"), Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1"}})
		if va.Status.Attached {
			t.Error("a VolumeAttachment kept the status it was created with")
		}
		va.Status.Attached = true
		if got, err := s.VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil || !got.Status.Attached {
			t.Errorf("update status: %v", err)
		}
		va, _ = s.VolumeAttachments().Get(ctx, "va-1", metav1.GetOptions{})
		va.Spec.NodeName = "node-2"
		if _, err := s.VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing a VolumeAttachment's spec: %v, want Invalid", err)
		}

		vac := exerciseKind(t, s.VolumeAttributesClasses(), &storagev1.VolumeAttributesClass{ObjectMeta: labelled("gold"), DriverName: "csi.example.com",
			Parameters: map[string]string{"iops": "1000"}},
			&storagev1.VolumeAttributesClass{ObjectMeta: plain("silver"), DriverName: "csi.example.com", Parameters: map[string]string{"iops": "100"}},
			&storagev1.VolumeAttributesClass{ObjectMeta: plain("bronze"), DriverName: "csi.example.com"})
		vac.Parameters["iops"] = "2000"
		if _, err := s.VolumeAttributesClasses().Update(ctx, vac, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing a VolumeAttributesClass's parameters: %v, want Invalid", err)
		}

		for _, del := range []func() error{
			func() error { return s.CSIDrivers().Delete(ctx, "csi.example.com", metav1.DeleteOptions{}) },
			func() error { return s.CSINodes().Delete(ctx, "node-1", metav1.DeleteOptions{}) },
			func() error { return caps.Delete(ctx, "cap-1", metav1.DeleteOptions{}) },
			func() error { return s.VolumeAttachments().Delete(ctx, "va-1", metav1.DeleteOptions{}) },
			func() error { return s.VolumeAttributesClasses().Delete(ctx, "gold", metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
		if err := caps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deletecollection: %v", err)
		}
		if l, _ := caps.List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("%d capacities left after deletecollection", len(l.Items))
		}
	})

	t.Run("certificates", func(t *testing.T) {
		ctbs := c.client.CertificatesV1().ClusterTrustBundles()
		bundle := selfSignedPEM(t)
		b := exerciseKind(t, ctbs, &certificatesv1.ClusterTrustBundle{ObjectMeta: labelled("example.com:signer:roots"),
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: bundle}},
			&certificatesv1.ClusterTrustBundle{ObjectMeta: plain("plain-roots"), Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: bundle}},
			&certificatesv1.ClusterTrustBundle{ObjectMeta: plain("not-pem"), Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: "hello"}})
		if _, err := ctbs.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: plain("wrong-prefix"),
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: bundle}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("a bundle not named after its signer: %v, want Invalid", err)
		}
		b.Spec.SignerName = "example.com/other"
		if _, err := ctbs.Update(ctx, b, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing signerName: %v, want Invalid", err)
		}
		if err := ctbs.Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	t.Run("apiservices", func(t *testing.T) {
		// Every built-in group version is a Local, Available APIService.
		out := newKubectl(t, c).ok(t, "get", "apiservices", "v1.apps", "v1.")
		if !strings.Contains(out, "v1.apps") || !strings.Contains(out, "Local") || !strings.Contains(out, "True") {
			t.Errorf("kubectl get apiservices:\n%s", out)
		}
	})

	t.Run("networking", func(t *testing.T) {
		n := c.client.NetworkingV1()
		// The Service range is published as the ServiceCIDR "kubernetes".
		def, err := n.ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(def.Spec.CIDRs) != 1 || def.Spec.CIDRs[0] != "10.96.0.0/12" || !meta.IsStatusConditionTrue(def.Status.Conditions, "Ready") {
			t.Errorf("the default ServiceCIDR: %v, %+v", err, def)
		}
		sc := exerciseKind(t, n.ServiceCIDRs(), &networkingv1.ServiceCIDR{ObjectMeta: labelled("extra"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}},
			&networkingv1.ServiceCIDR{ObjectMeta: plain("extra-2"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.201.0.0/24"}}},
			&networkingv1.ServiceCIDR{ObjectMeta: plain("bad"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.0/8", "10.1.0.0/16"}}})
		sc.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Tested", LastTransitionTime: metav1.Now()}}
		if got, err := n.ServiceCIDRs().UpdateStatus(ctx, sc, metav1.UpdateOptions{}); err != nil || len(got.Status.Conditions) != 1 {
			t.Errorf("update status: %v", err)
		}
		if err := n.ServiceCIDRs().Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
		parent := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
		exerciseKind(t, n.IPAddresses(), &networkingv1.IPAddress{ObjectMeta: labelled("10.200.0.10"), Spec: networkingv1.IPAddressSpec{ParentRef: parent}},
			&networkingv1.IPAddress{ObjectMeta: plain("2001:db8::1"), Spec: networkingv1.IPAddressSpec{ParentRef: parent}},
			&networkingv1.IPAddress{ObjectMeta: plain("2001:db8:0::2"), Spec: networkingv1.IPAddressSpec{ParentRef: parent}})
		if err := n.IPAddresses().Delete(ctx, "10.200.0.10", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	t.Run("flowcontrol", func(t *testing.T) {
		f := c.client.FlowcontrolV1()
		for _, name := range []string{"exempt", "catch-all"} {
			if _, err := f.FlowSchemas().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("mandatory flow schema %s: %v", name, err)
			}
			if _, err := f.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("mandatory priority level %s: %v", name, err)
			}
		}
		limited := func(name string) *flowcontrolv1.PriorityLevelConfiguration {
			return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: plain(name), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}}}
		}
		good := limited("tenant")
		good.Labels = testLabels()
		bad := limited("greedy")
		bad.Spec.Limited.LimitResponse.Queuing.HandSize, bad.Spec.Limited.LimitResponse.Queuing.Queues = 10, 5
		pl := exerciseKind(t, f.PriorityLevelConfigurations(), good, limited("other-tenant"), bad)
		if q := pl.Spec.Limited.LimitResponse.Queuing; *pl.Spec.Limited.NominalConcurrencyShares != 30 || q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 {
			t.Errorf("priority level defaults: %+v", pl.Spec.Limited)
		}
		pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Tested", Status: flowcontrolv1.ConditionTrue}}
		if _, err := f.PriorityLevelConfigurations().UpdateStatus(ctx, pl, metav1.UpdateOptions{}); err != nil {
			t.Errorf("update status: %v", err)
		}
		schema := func(name string, precedence int32) *flowcontrolv1.FlowSchema {
			return &flowcontrolv1.FlowSchema{ObjectMeta: plain(name), Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "tenant"}, MatchingPrecedence: precedence,
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"default"}}},
				}}}}
		}
		fsGood := schema("alice", 0)
		fsGood.Labels = testLabels()
		fs := exerciseKind(t, f.FlowSchemas(), fsGood, schema("bob", 500), schema("first", 1))
		if fs.Spec.MatchingPrecedence != 1000 {
			t.Errorf("matchingPrecedence defaults to %d, want 1000", fs.Spec.MatchingPrecedence)
		}
		fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}
		if got, err := f.FlowSchemas().UpdateStatus(ctx, fs, metav1.UpdateOptions{}); err != nil || len(got.Status.Conditions) != 1 {
			t.Errorf("update status: %v", err)
		}
		if err := f.FlowSchemas().Delete(ctx, "alice", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
		if err := f.PriorityLevelConfigurations().Delete(ctx, "tenant", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	t.Run("storagemigration", func(t *testing.T) {
		svms := c.client.StoragemigrationV1().StorageVersionMigrations()
		svm := exerciseKind(t, svms, &storagemigrationv1.StorageVersionMigration{ObjectMeta: labelled("secrets"),
			Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "secrets"}}},
			&storagemigrationv1.StorageVersionMigration{ObjectMeta: plain("deployments"),
				Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}},
			&storagemigrationv1.StorageVersionMigration{ObjectMeta: plain("nothing")})
		svm.Status.Conditions = []metav1.Condition{{Type: string(storagemigrationv1.MigrationSucceeded), Status: metav1.ConditionTrue,
			Reason: "Done", LastTransitionTime: metav1.Now()}}
		svm, err := svms.UpdateStatus(ctx, svm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update status: %v", err)
		}
		svm.Status.Conditions[0].Status = metav1.ConditionFalse
		if _, err := svms.UpdateStatus(ctx, svm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("un-succeeding a migration: %v, want Invalid", err)
		}
		if err := svms.Delete(ctx, "secrets", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	k := newKubectl(t, c)
	for _, tc := range []struct {
		resource string
		header   []string
	}{
		{"csidrivers", []string{"NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"}},
		{"csinodes", []string{"NAME", "DRIVERS", "AGE"}},
		{"volumeattachments", []string{"NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"}},
		{"vac", []string{"NAME", "DRIVERNAME", "AGE"}},
		{"clustertrustbundles", []string{"NAME", "SIGNERNAME"}},
		{"servicecidrs", []string{"NAME", "CIDRS", "AGE"}},
		{"ipaddresses", []string{"NAME", "PARENTREF"}},
		{"flowschemas", []string{"NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"}},
		{"prioritylevelconfigurations", []string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"}},
		{"storageversionmigrations", []string{"NAME", "RESOURCE"}},
	} {
		out := k.ok(t, "get", tc.resource)
		if got := tableHeader(out); !slices.Equal(got, tc.header) {
			t.Errorf("kubectl get %s: header %v, want %v", tc.resource, got, tc.header)
		}
	}
}
