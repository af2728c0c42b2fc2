package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

// An HPA scales a Deployment up while its pods burn CPU (measured from
// their cgroups by the kubelet, served by metrics.k8s.io) and back down
// once they stop. Only configuration is shortened: the HPA's sync period
// and its scale-down stabilization window.
func TestHPAScalesOnCPU(t *testing.T) {
	c := newClusterWith(t, 1, func(cfg *controlplane.Config) {
		cfg.Controllers.HPASyncPeriod = 3 * time.Second
	})
	k := c.kubectl
	load := t.TempDir()
	// The pods burn while /load/burn exists: one switch for all of them,
	// including the ones the HPA adds.
	c.apply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: burner}
spec:
  replicas: 1
  selector: {matchLabels: {app: burner}}
  template:
    metadata: {labels: {app: burner}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "while true; do if [ -f /load/burn ]; then i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; else sleep 1; fi; done"]
        resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}
        volumeMounts: [{name: load, mountPath: /load}]
      volumes: [{name: load, hostPath: {path: %s}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burner}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burner}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 10}
`, load))
	c.waitReady(t, "app=burner", 1)
	if err := os.WriteFile(filepath.Join(load, "burn"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.waitFor(3*time.Minute, "the HPA to scale burner up to 4", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "burner", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 4, nil
	})
	t.Logf("scaled up to 4 after %v", time.Since(start).Round(time.Second))
	c.waitReady(t, "app=burner", 4)
	if top := k.OK(t, "top", "pods", "-l", "app=burner"); !strings.Contains(top, "burner-") {
		t.Errorf("kubectl top pods:\n%s", top)
	}
	desc := k.OK(t, "describe", "hpa", "burner")
	if !strings.Contains(desc, "SuccessfulRescale") || !strings.Contains(desc, "above target") {
		t.Errorf("kubectl describe hpa shows no rescale event:\n%s", desc)
	}

	if err := os.Remove(filepath.Join(load, "burn")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	c.waitFor(3*time.Minute, "the HPA to scale burner back down to 1", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "burner", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 1, nil
	})
	t.Logf("scaled down to 1 after %v", time.Since(start).Round(time.Second))
	h, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "burner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Status.CurrentReplicas < 1 || h.Status.DesiredReplicas != 1 {
		t.Errorf("HPA status current %d desired %d", h.Status.CurrentReplicas, h.Status.DesiredReplicas)
	}
}
