package integration

import (
	"context"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
}

func TestClientGoCRUD(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	deps := c.client.AppsV1().Deployments("default")

	created, err := deps.Create(ctx, testDeployment("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Generation != 1 || created.CreationTimestamp.IsZero() {
		t.Fatalf("server-set metadata missing: %+v", created.ObjectMeta)
	}
	if created.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || *created.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("defaults not applied: %+v", created.Spec)
	}
	if _, err := deps.Create(ctx, testDeployment("web", 2), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v, want AlreadyExists", err)
	}

	// A spec change bumps generation; a stale resourceVersion conflicts.
	created.Spec.Replicas = ptr.To[int32](3)
	updated, err := deps.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 {
		t.Fatalf("generation = %d, want 2", updated.Generation)
	}
	if _, err := deps.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want Conflict", err)
	}

	// Status goes through /status only.
	updated.Status.Replicas = 3
	st, err := deps.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil || st.Status.Replicas != 3 || st.Generation != 2 {
		t.Fatalf("update status: %+v %v", st.Status, err)
	}
	// A status patch may set annotations, as upstream's status
	// strategies allow; it cannot change the spec.
	sp, err := deps.Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedstatus":"true"}},"spec":{"replicas":9},"status":{"readyReplicas":1}}`), metav1.PatchOptions{}, "status")
	if err != nil || sp.Annotations["patchedstatus"] != "true" || sp.Status.ReadyReplicas != 1 || *sp.Spec.Replicas != 3 {
		t.Fatalf("status patch with an annotation and a spec change: %v %+v", err, sp)
	}
	st = sp
	st.Status.Replicas = 7
	st.Labels["extra"] = "yes"
	main, err := deps.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil || main.Status.Replicas != 3 || main.Labels["extra"] != "yes" {
		t.Fatalf("status changed through the main resource: %+v %v", main.Status, err)
	}

	// The three patch types.
	if p, err := deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"merge":"1"}}}`), metav1.PatchOptions{}); err != nil || p.Labels["merge"] != "1" {
		t.Fatalf("merge patch: %v", err)
	}
	if p, err := deps.Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":5}]`), metav1.PatchOptions{}); err != nil || *p.Spec.Replicas != 5 {
		t.Fatalf("json patch: %v", err)
	}
	smp := `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}`
	p, err := deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(smp), metav1.PatchOptions{})
	if err != nil || len(p.Spec.Template.Spec.Containers) != 2 {
		t.Fatalf("strategic merge patch should merge containers by name: %v %+v", err, p.Spec.Template.Spec.Containers)
	}

	// Scale subresource.
	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 5 || scale.Status.Selector != "app=web" {
		t.Fatalf("get scale: %+v %v", scale, err)
	}
	scale.Spec.Replicas = 1
	if _, err := deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, _ := deps.Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 1 {
		t.Fatalf("replicas after scale = %d", *d.Spec.Replicas)
	}

	// Finalizers hold a deleted object until they are removed.
	if _, err := deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("object with finalizer: %v %+v", err, held)
	}
	if _, err := deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deps.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after finalizers cleared: %v, want NotFound", err)
	}
}

func TestListSelectorsAndPaging(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	for i := 0; i < 25; i++ {
		tier := "back"
		if i%2 == 0 {
			tier = "front"
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i), Labels: map[string]string{"tier": tier}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	front, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "tier=front"})
	if err != nil || len(front.Items) != 13 {
		t.Fatalf("label selector: %d items, %v", len(front.Items), err)
	}
	one, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=cm-3"})
	if err != nil || len(one.Items) != 1 {
		t.Fatalf("field selector: %v", err)
	}
	// The namespace also holds kube-root-ca.crt, published whenever the
	// root-ca-cert-publisher gets to it: only the test's ConfigMaps count.
	notOne, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "tier", FieldSelector: "metadata.name!=cm-3"})
	if err != nil || len(notOne.Items) != 24 {
		t.Fatalf("!= field selector: %d %v", len(notOne.Items), err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=1"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unknown field label: %v, want BadRequest", err)
	}
	seen := map[string]bool{}
	opts := metav1.ListOptions{Limit: 4, LabelSelector: "tier=back"}
	pages := 0
	for {
		page, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Items) > 4 || pages <= 3 && len(page.Items) != 4 {
			t.Fatalf("page %d has %d items, want 4", pages, len(page.Items))
		}
		for _, it := range page.Items {
			seen[it.Name] = true
		}
		// A write between pages does not show up: pages read one snapshot.
		if pages == 1 {
			_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-99", Labels: map[string]string{"tier": "back"}}}, metav1.CreateOptions{})
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	// A last, empty page may follow: objects the selector leaves out
	// (kube-root-ca.crt) are still ahead of the third page in storage.
	if len(seen) != 12 || pages > 4 || seen["cm-99"] {
		t.Fatalf("paged %d pages, %d items (cm-99 seen: %v)", pages, len(seen), seen["cm-99"])
	}
	// An unfiltered page says how many objects follow it; a filtered one
	// cannot know, as in Kubernetes.
	all, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := cms.List(ctx, metav1.ListOptions{Limit: 5})
	if err != nil || first.RemainingItemCount == nil || *first.RemainingItemCount != int64(len(all.Items)-5) {
		t.Errorf("remainingItemCount of the first of %d: %v, %v", len(all.Items), err, first.RemainingItemCount)
	}
	if filtered, err := cms.List(ctx, metav1.ListOptions{Limit: 5, LabelSelector: "tier=back"}); err != nil || filtered.RemainingItemCount != nil {
		t.Errorf("remainingItemCount of a filtered page: %v, %v", err, filtered.RemainingItemCount)
	}
}

func TestInformerSeesChanges(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	events := map[string]int{}
	record := func(kind string) {
		mu.Lock()
		events[kind]++
		mu.Unlock()
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { record("add") },
		UpdateFunc: func(_, _ any) { record("update") },
		DeleteFunc: func(any) { record("delete") },
	})
	if _, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync (does the server implement sendInitialEvents?)")
	}
	cms := c.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		ok := events["add"] >= 2 && events["update"] >= 1 && events["delete"] >= 1
		mu.Unlock()
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("informer events = %v, want 2 adds, an update and a delete", events)
}

func TestRestartKeepsStateAndRevisionsGrow(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	cm, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	c.restart()
	ctx = ctxT(t)
	got, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "b" || got.UID != cm.UID {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	next, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := strconv.ParseInt(next.ResourceVersion, 10, 64); after <= before {
		t.Fatalf("resourceVersion went from %d to %d across a restart", before, after)
	}
}

func TestNamespaceDeletionRemovesContent(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.AppsV1().Deployments("doomed").Create(ctx, testDeployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("missing").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: %v, want NotFound", err)
	}
	if err := c.client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace still there after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if cms, _ := c.client.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{}); len(cms.Items) != 0 {
		t.Fatalf("configmaps left behind: %d", len(cms.Items))
	}
	if ds, _ := c.client.AppsV1().Deployments("doomed").List(ctx, metav1.ListOptions{}); len(ds.Items) != 0 {
		t.Fatalf("deployments left behind: %d", len(ds.Items))
	}
}

// A namespace's pods go first: while a pod is held by a finalizer, the
// rest (its ConfigMap) stays, and the namespace's conditions say what is
// left and what holds it, as with Kubernetes' ordered namespace deletion.
func TestNamespaceDeletionDeletesPodsFirst(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ordered"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := c.client.CoreV1().Pods("ordered").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("ordered").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Namespaces().Delete(ctx, "ordered", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionContentFailure: "False ContentDeleted",
		corev1.NamespaceContentRemaining:       "True Some resources are remaining: pods. has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:    "True Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	var got map[corev1.NamespaceConditionType]string
	waitFor(t, "the namespace's deletion conditions", func(ctx context.Context) (bool, error) {
		ns, err := c.client.CoreV1().Namespaces().Get(ctx, "ordered", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = map[corev1.NamespaceConditionType]string{}
		for _, cond := range ns.Status.Conditions {
			text := string(cond.Status) + " " + cond.Message
			if cond.Status == corev1.ConditionFalse {
				text = string(cond.Status) + " " + cond.Reason
			}
			got[cond.Type] = text
		}
		for k, v := range want {
			if got[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
	if _, err := c.client.CoreV1().ConfigMaps("ordered").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ConfigMap went before the pod: %v", err)
	}
	held, err := c.client.CoreV1().Pods("ordered").Get(ctx, "held", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("the pod should be deleting: %v %+v", err, held)
	}
	held.Finalizers = nil
	if _, err := c.client.CoreV1().Pods("ordered").Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace to go", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "ordered", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func TestServicesGetClusterIPsAndNodePorts(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	svcs := c.client.CoreV1().Services("default")
	svc := func(name string, typ corev1.ServiceType, ip string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
	}
	a, err := svcs.Create(ctx, svc("a", corev1.ServiceTypeClusterIP, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.ClusterIP == "" || a.Spec.ClusterIPs[0] != a.Spec.ClusterIP || a.Spec.Ports[0].TargetPort.IntValue() != 80 {
		t.Fatalf("service a: clusterIP %q, ports %+v", a.Spec.ClusterIP, a.Spec.Ports)
	}
	np, err := svcs.Create(ctx, svc("np", corev1.ServiceTypeNodePort, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := np.Spec.Ports[0].NodePort; p < 30000 || p > 32767 || np.Spec.ClusterIP == a.Spec.ClusterIP {
		t.Fatalf("nodeport service: %+v", np.Spec)
	}
	if _, err := svcs.Create(ctx, svc("b", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("second service on %s: %v, want Invalid (already allocated)", a.Spec.ClusterIP, err)
	}
	if _, err := svcs.Create(ctx, svc("c", corev1.ServiceTypeClusterIP, "192.168.1.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("clusterIP outside the range: %v, want Invalid", err)
	}
	headless, err := svcs.Create(ctx, svc("h", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone), metav1.CreateOptions{})
	if err != nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("headless: %v %+v", err, headless)
	}
	// An update that leaves clusterIP out keeps it; deleting frees it.
	a.Spec.ClusterIP, a.Spec.ClusterIPs = "", nil
	a.Labels = map[string]string{"x": "y"}
	if upd, err := svcs.Update(ctx, a, metav1.UpdateOptions{}); err != nil || upd.Spec.ClusterIP == "" {
		t.Fatalf("update without clusterIP: %v %+v", err, upd)
	}
	got, _ := svcs.Get(ctx, "a", metav1.GetOptions{})
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, svc("b", corev1.ServiceTypeClusterIP, got.Spec.ClusterIP), metav1.CreateOptions{}); err != nil {
		t.Fatalf("reusing a freed clusterIP: %v", err)
	}
}

// Concurrent creates never share a clusterIP or node port, and random
// allocation leaves the bottom of the range (kube-dns's 10.96.0.10, other
// chosen addresses) to those who ask for it by address.
func TestConcurrentServicesGetDistinctAllocations(t *testing.T) {
	// A /24, so that a random pick would land in the bottom 16 often.
	c := startClusterWith(t, func(cfg *controlplane.Config) { cfg.ServiceCIDR = "10.96.0.0/24" })
	ctx := ctxT(t)
	svcs := c.client.CoreV1().Services("default")
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svcs.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "s" + strconv.Itoa(i)},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
			}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	list, err := svcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range list.Items {
		if s.Spec.Type != corev1.ServiceTypeNodePort {
			continue
		}
		if other, dup := ips[s.Spec.ClusterIP]; dup {
			t.Errorf("%s and %s share clusterIP %s", s.Name, other, s.Spec.ClusterIP)
		}
		ips[s.Spec.ClusterIP] = s.Name
		if ip := netip.MustParseAddr(s.Spec.ClusterIP); ip.As4()[3] <= 17 {
			t.Errorf("%s got %s from the static band", s.Name, s.Spec.ClusterIP)
		}
		for _, p := range s.Spec.Ports {
			if other, dup := ports[p.NodePort]; dup {
				t.Errorf("%s and %s share node port %d", s.Name, other, p.NodePort)
			}
			ports[p.NodePort] = s.Name
		}
	}
	if len(ips) != n || len(ports) != 2*n {
		t.Errorf("%d clusterIPs and %d node ports for %d services", len(ips), len(ports), n)
	}
	// The tenth address is still there for kube-dns.
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}},
		metav1.CreateOptions{}); err != nil {
		t.Errorf("10.96.0.10 by address: %v", err)
	}
}

// A patch without a resourceVersion applies to whatever is current, even
// when another writer got there first; one with a stale one conflicts.
func TestPatchRetriesUnlessPreconditioned(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			patch := []byte(`{"metadata":{"labels":{"k` + strconv.Itoa(i) + `":"v"}}}`)
			_, err := cms.Patch(ctx, "hot", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent patch: %v", err)
		}
	}
	got, _ := cms.Get(ctx, "hot", metav1.GetOptions{})
	if len(got.Labels) != 40 {
		t.Fatalf("labels after 40 concurrent patches: %d", len(got.Labels))
	}
	stale := []byte(`{"metadata":{"resourceVersion":"` + cm.ResourceVersion + `","labels":{"late":"x"}}}`)
	if _, err := cms.Patch(ctx, "hot", types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("patch with a stale resourceVersion: %v, want Conflict", err)
	}
}
