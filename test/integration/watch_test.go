package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// createNamespace makes a namespace for one subtest, so its watches see
// only its own objects.
func createNamespace(t *testing.T, ctx context.Context, c *cluster, name string) string {
	t.Helper()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// nextEvent waits for the next event on w.
func nextEvent(t *testing.T, w watch.Interface, timeout time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event in %v", timeout)
	}
	return watch.Event{}
}

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t *testing.T, w watch.Interface, timeout time.Duration) watch.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ev := nextEvent(t, w, time.Until(deadline))
		if ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// expectQuiet checks no (non-bookmark) event arrives for d.
func expectQuiet(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	timer := time.After(d)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type != watch.Bookmark {
				t.Fatalf("unexpected event %s %s", ev.Type, describe(ev.Object))
			}
		case <-timer:
			return
		}
	}
}

func describe(obj runtime.Object) string {
	if obj == nil {
		return "<nil>"
	}
	if st, ok := obj.(*metav1.Status); ok {
		return "Status " + st.Message
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "?"
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

func rvOf(t *testing.T, obj runtime.Object) int64 {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return rv
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) watch.Event {
	t.Helper()
	ev := nextNonBookmark(t, w, 10*time.Second)
	if ev.Type != typ {
		t.Fatalf("event %s %s, want %s %s", ev.Type, describe(ev.Object), typ, name)
	}
	if m, err := meta.Accessor(ev.Object); err != nil || m.GetName() != name {
		t.Fatalf("event %s %s, want %s", ev.Type, describe(ev.Object), name)
	}
	return ev
}

// expectPodEvent is expectEvent for pods, which controllers (the scheduler
// recording that a pod is unschedulable) also modify: MODIFIED events that
// do not satisfy ok are skipped.
func expectPodEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ev := nextNonBookmark(t, w, time.Until(deadline))
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod || pod.Name != name {
			t.Fatalf("event %s %s, want %s pod %s", ev.Type, describe(ev.Object), typ, name)
		}
		if ev.Type == typ && (ok == nil || ok(pod)) {
			return pod
		}
		if ev.Type != watch.Modified {
			t.Fatalf("event %s %s, want %s", ev.Type, describe(ev.Object), typ)
		}
	}
}

// withoutRootCAPublisher keeps the kube-root-ca.crt ConfigMaps out of
// tests that count every ConfigMap event of their namespaces.
var withoutRootCAPublisher = withoutControllers("root-ca-cert-publisher")

func TestWatchSemantics(t *testing.T) {
	c := startClusterWith(t, withoutRootCAPublisher)

	t.Run("replay from a resourceVersion", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "replay")
		cms := c.client.CoreV1().ConfigMaps(ns)
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Data = map[string]string{"k": "v"}
		updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		added := expectEvent(t, w, watch.Added, "a")
		modified := expectEvent(t, w, watch.Modified, "a")
		deleted := expectEvent(t, w, watch.Deleted, "a")
		if rvOf(t, added.Object) != rvOf(t, created) || rvOf(t, modified.Object) != rvOf(t, updated) || rvOf(t, deleted.Object) <= rvOf(t, updated) {
			t.Fatalf("resourceVersions: added %s modified %s deleted %s; created %s updated %s",
				describe(added.Object), describe(modified.Object), describe(deleted.Object), created.ResourceVersion, updated.ResourceVersion)
		}
		if got := modified.Object.(*corev1.ConfigMap).Data["k"]; got != "v" {
			t.Fatalf("MODIFIED carries data %q", got)
		}
		expectQuiet(t, w, 300*time.Millisecond)

		// A watch from the update's resourceVersion starts after it.
		w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: updated.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		expectEvent(t, w2, watch.Deleted, "a")
		expectQuiet(t, w2, 300*time.Millisecond)

		// A single-object watch (fieldSelector metadata.name) sees only it.
		w3, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=b"})
		if err != nil {
			t.Fatal(err)
		}
		defer w3.Stop()
		for _, name := range []string{"c", "b"} {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		expectEvent(t, w3, watch.Added, "b")
	})

	t.Run("label selector", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "labels")
		cms := c.client.CoreV1().ConfigMaps(ns)
		w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "sel=yes", ResourceVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		relabel := func(name, value string) {
			t.Helper()
			patch := `{"metadata":{"labels":{"sel":"` + value + `"}}}`
			if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"sel": "no"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		relabel("x", "yes")
		relabel("x", "yes2")
		relabel("x", "yes")
		if _, err := cms.Patch(ctx, "x", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		relabel("x", "no")
		if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker", Labels: map[string]string{"sel": "yes"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "marker", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		in := expectEvent(t, w, watch.Added, "x")
		if in.Object.(*corev1.ConfigMap).Labels["sel"] != "yes" {
			t.Fatalf("ADDED on relabel in carries labels %v", in.Object.(*corev1.ConfigMap).Labels)
		}
		out := expectEvent(t, w, watch.Deleted, "x")
		if out.Object.(*corev1.ConfigMap).Labels["sel"] != "yes2" {
			t.Fatalf("DELETED on relabel out carries labels %v", out.Object.(*corev1.ConfigMap).Labels)
		}
		expectEvent(t, w, watch.Added, "x")
		expectEvent(t, w, watch.Modified, "x")
		expectEvent(t, w, watch.Deleted, "x")
		expectEvent(t, w, watch.Added, "marker")
		expectEvent(t, w, watch.Deleted, "marker")
		expectQuiet(t, w, 300*time.Millisecond)
	})

	t.Run("bookmarks", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "bookmarks")
		cms := c.client.CoreV1().ConfigMaps(ns)
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// A write elsewhere moves the store's revision on: the bookmark
		// tells this watch it has seen everything up to it.
		other, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ev := nextEvent(t, w, 5*time.Second)
		if ev.Type != watch.Bookmark {
			t.Fatalf("first event %s %s, want BOOKMARK", ev.Type, describe(ev.Object))
		}
		bm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || bm.Name != "" || len(bm.Data) != 0 {
			t.Fatalf("bookmark object %#v", ev.Object)
		}
		if rv := rvOf(t, bm); rv < rvOf(t, other) || rv <= start {
			t.Fatalf("bookmark at %d, want >= %s", rv, other.ResourceVersion)
		}
		// A change still arrives between bookmarks.
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, watch.Added, "after")

		// Without allowWatchBookmarks there are none.
		w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		expectEvent(t, w2, watch.Added, "after")
		if _, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere2"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w2.ResultChan():
			t.Fatalf("watch without bookmarks got %s %s", ev.Type, describe(ev.Object))
		case <-time.After(1500 * time.Millisecond): // more than the test cluster's 1s bookmark interval
		}
	})

	t.Run("sendInitialEvents", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "initial")
		cms := c.client.CoreV1().ConfigMaps(ns)
		want := map[string]bool{}
		for i := 0; i < 5; i++ {
			name := "init-" + strconv.Itoa(i)
			want[name] = true
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{
			SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var lastRV int64
		for len(want) > 0 {
			ev := nextEvent(t, w, 10*time.Second)
			if ev.Type != watch.Added {
				t.Fatalf("initial event %s %s, want ADDED (still missing %v)", ev.Type, describe(ev.Object), want)
			}
			name := ev.Object.(*corev1.ConfigMap).Name
			if !want[name] {
				t.Fatalf("unexpected or repeated initial object %s", name)
			}
			delete(want, name)
			lastRV = max(lastRV, rvOf(t, ev.Object))
		}
		ev := nextEvent(t, w, 10*time.Second)
		if ev.Type != watch.Bookmark {
			t.Fatalf("after the initial events: %s %s, want BOOKMARK", ev.Type, describe(ev.Object))
		}
		bm := ev.Object.(*corev1.ConfigMap)
		if bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("initial-events-end bookmark annotations = %v", bm.Annotations)
		}
		if rvOf(t, bm) < lastRV {
			t.Fatalf("initial-events-end bookmark at %s, before the last initial object %d", bm.ResourceVersion, lastRV)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		live := expectEvent(t, w, watch.Added, "live")
		if rvOf(t, live.Object) <= rvOf(t, bm) {
			t.Fatalf("live event at %s, not after the bookmark at %s", describe(live.Object), bm.ResourceVersion)
		}

		// sendInitialEvents without its companions is rejected, as in Kubernetes.
		_, err = cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("sendInitialEvents without allowWatchBookmarks: %v, want Invalid", err)
		}
		_, err = cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("sendInitialEvents without resourceVersionMatch: %v, want Invalid", err)
		}
	})

	t.Run("table watch", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "tables")
		pods := c.client.CoreV1().Pods(ns)
		newPod := func(name string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		}
		if _, err := pods.Create(ctx, newPod("first"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(c.config)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, _ := http.NewRequestWithContext(wctx, "GET", c.cp.URL+"/api/v1/namespaces/"+ns+"/pods?watch=true", nil)
		req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("table watch: HTTP %d", resp.StatusCode)
		}
		type event struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		events := make(chan event)
		go func() {
			dec := json.NewDecoder(bufio.NewReader(resp.Body))
			for {
				var ev event
				if dec.Decode(&ev) != nil {
					close(events)
					return
				}
				select {
				case events <- ev:
				case <-wctx.Done():
					return
				}
			}
		}()
		next := func() (string, *metav1.Table) {
			t.Helper()
		again:
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("table watch ended")
				}
				var table metav1.Table
				if err := json.Unmarshal(ev.Object, &table); err != nil {
					t.Fatalf("event object is not a Table: %v\n%s", err, ev.Object)
				}
				if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
					t.Fatalf("event object %s/%s, want meta.k8s.io/v1 Table", table.APIVersion, table.Kind)
				}
				if ev.Type == "MODIFIED" {
					goto again // the scheduler's status updates
				}
				return ev.Type, &table
			case <-time.After(10 * time.Second):
				t.Fatal("no table event in 10s")
			}
			return "", nil
		}
		checkRow := func(table *metav1.Table, name string) {
			t.Helper()
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) == 0 || table.Rows[0].Cells[0] != name {
				t.Fatalf("table rows %+v, want one row for %s", table.Rows, name)
			}
			var pm metav1.PartialObjectMetadata
			if err := json.Unmarshal(table.Rows[0].Object.Raw, &pm); err != nil || pm.Name != name || pm.Kind != "PartialObjectMetadata" {
				t.Fatalf("row object %s: %v", table.Rows[0].Object.Raw, err)
			}
		}
		typ, table := next()
		if typ != "ADDED" {
			t.Fatalf("first table event %s", typ)
		}
		var cols []string
		for _, c := range table.ColumnDefinitions {
			cols = append(cols, c.Name)
		}
		for i, want := range []string{"Name", "Ready", "Status", "Restarts", "Age"} {
			if i >= len(cols) || cols[i] != want {
				t.Fatalf("pod table columns %v, want Name Ready Status Restarts Age first", cols)
			}
		}
		checkRow(table, "first")
		if table.Rows[0].Cells[1] != "0/1" || table.Rows[0].Cells[2] != "Pending" {
			t.Fatalf("pod row cells %v, want 0/1 Pending", table.Rows[0].Cells)
		}
		if _, err := pods.Create(ctx, newPod("second"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		typ, table = next()
		if typ != "ADDED" {
			t.Fatalf("second table event %s", typ)
		}
		checkRow(table, "second")
		if err := pods.Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		typ, table = next()
		if typ != "DELETED" {
			t.Fatalf("third table event %s", typ)
		}
		checkRow(table, "second")
	})

	t.Run("namespaced watch", func(t *testing.T) {
		ctx := ctxT(t)
		a := createNamespace(t, ctx, c, "ns-a")
		b := createNamespace(t, ctx, c, "ns-b")
		w, err := c.client.CoreV1().ConfigMaps(a).Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		all, err := c.client.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: "1", FieldSelector: "metadata.name=same"})
		if err != nil {
			t.Fatal(err)
		}
		defer all.Stop()
		for _, ns := range []string{b, a} {
			if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "same"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ev := expectEvent(t, w, watch.Added, "same")
		if ns := ev.Object.(*corev1.ConfigMap).Namespace; ns != a {
			t.Fatalf("watch in %s saw an object in %s", a, ns)
		}
		expectQuiet(t, w, 300*time.Millisecond)
		// The all-namespaces watch sees both, in order.
		for _, ns := range []string{b, a} {
			if ev := expectEvent(t, all, watch.Added, "same"); ev.Object.(*corev1.ConfigMap).Namespace != ns {
				t.Fatalf("all-namespaces watch: %s, want namespace %s", describe(ev.Object), ns)
			}
		}
		// A namespace whose name is a prefix of another's is not mixed in.
		createNamespace(t, ctx, c, "ns-a-longer")
		if _, err := c.client.CoreV1().ConfigMaps("ns-a-longer").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "prefix"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectQuiet(t, w, 300*time.Millisecond)
	})

	t.Run("protobuf", func(t *testing.T) {
		ctx := ctxT(t)
		ns := createNamespace(t, ctx, c, "proto")
		cfg := rest.CopyConfig(c.config)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pods := client.CoreV1().Pods(ns)
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Patch(ctx, "pb", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"a":"c"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "pb", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		p := expectPodEvent(t, w, watch.Added, "pb", nil)
		if p.UID != created.UID || p.Spec.Containers[0].Image != "busybox:1.36" || len(p.Spec.Containers[0].Command) != 2 {
			t.Fatalf("protobuf ADDED object %#v", p)
		}
		expectPodEvent(t, w, watch.Modified, "pb", func(p *corev1.Pod) bool { return p.Labels["a"] == "c" })
		expectPodEvent(t, w, watch.Deleted, "pb", nil)

		// Bookmarks decode over protobuf too.
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb-tick"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, w, 5*time.Second); ev.Type != watch.Bookmark {
			t.Fatalf("protobuf watch: %s %s, want BOOKMARK", ev.Type, describe(ev.Object))
		} else if _, ok := ev.Object.(*corev1.Pod); !ok {
			t.Fatalf("protobuf bookmark object %T", ev.Object)
		}
	})
}

func etcdClient(t *testing.T, c *cluster) *clientv3.Client {
	t.Helper()
	if c.cp.EtcdEndpoint == "" {
		t.Fatal("the control plane has no embedded etcd endpoint")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.cp.EtcdEndpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func TestWatchAfterCompaction(t *testing.T) {
	c := startClusterWith(t, withoutRootCAPublisher)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v %q", err, page.Continue)
	}
	oldRV := created.ResourceVersion
	// A watch opened before compaction keeps going.
	open, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Stop()
	expectEvent(t, open, watch.Added, "old2")

	var last *corev1.ConfigMap
	for i := 0; i < 3; i++ {
		patch := `{"data":{"n":"` + strconv.Itoa(i) + `"}}`
		if last, err = cms.Patch(ctx, "old", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev := rvOf(t, last)
	if _, err := etcdClient(t, c).Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w, 10*time.Second)
	if ev.Type != watch.Error {
		t.Fatalf("watch from a compacted resourceVersion: %s %s, want ERROR", ev.Type, describe(ev.Object))
	}
	st, ok := ev.Object.(*metav1.Status)
	if !ok || st.Code != http.StatusGone || (st.Reason != metav1.StatusReasonExpired && st.Reason != metav1.StatusReasonGone) {
		t.Fatalf("ERROR object %#v, want a 410 Expired/Gone Status", ev.Object)
	}
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("the watch went on after its ERROR event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end after its ERROR event")
	}

	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("exact list at a compacted resourceVersion: %v, want 410", err)
	}
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != http.StatusGone {
		t.Fatalf("exact list error %#v, want code 410", err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("continue at a compacted resourceVersion: %v, want 410", err)
	}
	// The 410 carries a token that reads the rest at the newest revision,
	// as kube-apiserver's does: an inconsistent but complete remainder.
	expired := err.(apierrors.APIStatus).Status()
	if expired.ListMeta.Continue == "" {
		t.Fatalf("the 410 of a compacted continue token has no fresh token: %#v", expired)
	}
	rest, err := cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: expired.ListMeta.Continue})
	if err != nil || len(rest.Items) != 1 || rest.Items[0].Name == page.Items[0].Name || rest.ResourceVersion == page.ResourceVersion {
		t.Fatalf("list with the fresh token: %v %+v, want the second object at a newer revision", err, rest)
	}
	// The compaction revision itself is still readable.
	exact, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: last.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(exact.Items) != 2 {
		t.Fatalf("exact list at the compaction revision: %v", err)
	}
	// And a watch from it works.
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: last.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if err := cms.Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w2, watch.Deleted, "old")
	expectEvent(t, open, watch.Modified, "old")
}
