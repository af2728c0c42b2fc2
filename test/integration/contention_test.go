package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A hundred clients write one ConfigMap at once without a resourceVersion:
// with each kind of patch, and with updates. As in Kubernetes none is
// refused with 409 Conflict, and every patch is in the result.
func TestConcurrentWritesWithoutPreconditions(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	seed := map[string]string{"seed": "1"} // so JSON patches can add to the map
	for _, name := range []string{"patched", "replaced"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: seed}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const writers, rounds = 100, 3
	patches := []struct {
		pt   types.PatchType
		body func(key string) string
	}{
		{types.MergePatchType, func(key string) string { return fmt.Sprintf(`{"metadata":{"annotations":{%q:"1"}}}`, key) }},
		{types.StrategicMergePatchType, func(key string) string { return fmt.Sprintf(`{"metadata":{"annotations":{%q:"1"}}}`, key) }},
		{types.JSONPatchType, func(key string) string {
			return fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations/%s","value":"1"}]`, key)
		}},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*rounds)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range rounds {
				key := fmt.Sprintf("w%d-%d", i, round)
				p := patches[(i+round)%len(patches)]
				if _, err := cms.Patch(ctx, "patched", p.pt, []byte(p.body(key)), metav1.PatchOptions{}); err != nil {
					errs <- fmt.Errorf("%s patch %s: %w", p.pt, key, err)
				}
				// An update that carries no resourceVersion replaces whatever is there.
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "replaced"}, Data: map[string]string{"last": key}}
				if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					errs <- fmt.Errorf("update %s: %w", key, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 10 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d writes failed", failed, 2*writers*rounds)
	}
	got, err := cms.Get(context.Background(), "patched", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for i := range writers {
		for round := range rounds {
			if got.Annotations[fmt.Sprintf("w%d-%d", i, round)] != "1" {
				missing++
			}
		}
	}
	if missing > 0 || len(got.Annotations) != writers*rounds+1 {
		t.Fatalf("%d patches missing; %d annotations, want %d", missing, len(got.Annotations), writers*rounds+1)
	}
	if r, err := cms.Get(ctx, "replaced", metav1.GetOptions{}); err != nil || r.Data["last"] == "" {
		t.Fatalf("replaced: %+v %v", r, err)
	}
}
