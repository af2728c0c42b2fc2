package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// The control plane is killed (SIGKILL) while a run sits in a Wait state;
// started again, its engine picks the run up from its status and finishes
// it: the right output, each state entered once, the Wait as long as it
// said.
func TestWorkflowControlPlaneRestart(t *testing.T) {
	sc := newServerCluster(t, 1)
	c := sc.cluster
	dyn := dynamic.NewForConfigOrDie(c.config)
	c.apply(`apiVersion: minik8s.io/v1
kind: Workflow
metadata: {name: pause}
spec:
  definition:
    StartAt: Before
    States:
      Before: {Type: Pass, Result: {step: before}, ResultPath: $.before, Next: Pause}
      Pause: {Type: Wait, Seconds: 12, Next: After}
      After:
        Type: Pass
        Parameters:
          "id.$": $.id
          "before.$": $.before.step
          "name.$": $$.Execution.Name
        End: true
---
apiVersion: minik8s.io/v1
kind: WorkflowRun
metadata: {name: pause-1}
spec:
  workflow: pause
  input: {id: 42}
`)
	get := func(ctx context.Context) (*minik8sv1.WorkflowRun, error) {
		u, err := dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").Get(ctx, "pause-1", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		run := &minik8sv1.WorkflowRun{}
		return run, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, run)
	}
	c.waitFor(time.Minute, "the run to wait in Pause", func(ctx context.Context) (bool, error) {
		run, err := get(ctx)
		return err == nil && run.Status.CurrentState == "Pause", nil
	})

	sc.server.kill()
	time.Sleep(2 * time.Second)
	sc.server.start()
	sc.server.waitServing(c.client)

	var run *minik8sv1.WorkflowRun
	c.waitFor(2*time.Minute, "the run to end after the restart", func(ctx context.Context) (bool, error) {
		r, err := get(ctx)
		if err != nil {
			return false, nil
		}
		run = r
		return wfmeta.Finished(r.Status.Phase), nil
	})
	if run.Status.Phase != minik8sv1.WorkflowRunSucceeded || !jsonEqual(t, run.Status.Output.Raw, `{"id":42,"before":"before","name":"pause-1"}`) {
		t.Fatalf("after the restart: %s %s %s: %s", run.Status.Phase, run.Status.Output.Bytes(), run.Status.Error, run.Status.Cause)
	}
	if got := stateNames(run); !slices.Equal(got, []string{"Before", "Pause", "After"}) {
		t.Errorf("states entered %v, want Before, Pause, After once each", got)
	}
	if p := run.Status.History[1]; p.Exited == nil || p.Exited.Sub(p.Entered.Time) < 12*time.Second {
		t.Errorf("the Wait: entered %v, exited %v; want 12s", p.Entered, p.Exited)
	}
}
