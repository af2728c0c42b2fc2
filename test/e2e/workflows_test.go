package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func example(name string) string { return filepath.Join("..", "..", "examples", "serverless", name) }

func (c *functionsCluster) run(ctx context.Context, name string) (*minik8sv1.WorkflowRun, error) {
	u, err := c.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	run := &minik8sv1.WorkflowRun{}
	return run, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, run)
}

func (c *functionsCluster) runs(ctx context.Context, selector string) ([]minik8sv1.WorkflowRun, error) {
	l, err := c.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]minik8sv1.WorkflowRun, len(l.Items))
	for i := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitRun waits for a run's phase to be final and returns it.
func (c *functionsCluster) waitRun(name string, timeout time.Duration) *minik8sv1.WorkflowRun {
	c.t.Helper()
	var run *minik8sv1.WorkflowRun
	c.waitFor(timeout, "workflowrun "+name+" to end", func(ctx context.Context) (bool, error) {
		r, err := c.run(ctx, name)
		if err != nil {
			return false, nil
		}
		run = r
		return wfmeta.Finished(r.Status.Phase), nil
	})
	return run
}

func stateNames(run *minik8sv1.WorkflowRun) []string {
	var out []string
	for _, h := range run.Status.History {
		out = append(out, h.Name)
	}
	return out
}

// jsonEqual compares JSON documents by value.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

// runName is the run that `kubectl wf run` names on stderr or stdout.
func runCreated(out string) string {
	for _, f := range strings.Fields(out) {
		if n, ok := strings.CutPrefix(f, "workflowrun.minik8s.io/"); ok {
			return n
		}
	}
	return ""
}

// TestWorkflows is the user's story of issue 12 on a two-node cluster with
// the real functions add-on: the seeds' chain, branches and Fail state,
// the digits model as a pipeline with a Choice on its confidence, Retry
// and Catch against real failing functions, Parallel and Map fanning out
// over several instances, synchronous runs over HTTP through the gateway,
// and the three kinds of Trigger.
func TestWorkflows(t *testing.T) {
	c := newClusterWithFunctions(t, 2)
	k := c.kubectl
	ctx := context.Background()
	hc := &http.Client{Timeout: 5 * time.Minute}

	for _, f := range []string{"workflow-chain.yaml", "workflow-branchy.yaml", "workflow-retry.yaml", "workflow-fanout.yaml", "workflow-digits.yaml"} {
		k.OK(t, "apply", "-f", example(f))
	}
	for _, fn := range []string{"inc", "double", "minus3", "sum", "product", "flaky", "broken", "square", "preprocess", "classify", "accept", "review"} {
		c.waitFunction(fn, metav1.ConditionTrue, "", 5*time.Minute)
	}
	c.waitFor(time.Minute, "workflows Ready", func(ctx context.Context) (bool, error) {
		out, _, err := k.Run(t, "get", "workflows", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[0].status} {end}")
		return err == nil && strings.Count(out, "=True") == 5, nil
	})
	if out := k.OK(t, "get", "workflows"); !strings.Contains(out, "chain") || !strings.Contains(out, "READY") {
		t.Errorf("kubectl get workflows:\n%s", out)
	}

	t.Run("chain", func(t *testing.T) {
		out := k.OK(t, "wf", "run", "chain", "-d", `{"x": 5}`, "--wait")
		if !jsonEqual(t, []byte(out), `{"x": 9, "steps": ["inc", "double", "minus3"]}`) {
			t.Errorf("kubectl wf run chain --wait printed %q, want x 9 after inc, double, minus3", out)
		}
		out = k.OK(t, "wf", "run", "chain", "-d", `{"x": 0}`, "--wait")
		if !jsonEqual(t, []byte(out), `{"x": -1, "steps": ["inc", "double", "minus3"]}`) {
			t.Errorf("another input: %q, want x -1", out)
		}
	})

	t.Run("branches and Fail", func(t *testing.T) {
		// Synchronously over HTTP, through the gateway.
		r, err := call(hc, c.gateway+wfmeta.WorkflowPath("default", "branchy"), `{"x":1,"y":2}`)
		if err != nil {
			t.Fatal(err)
		}
		if r.code != http.StatusOK || !jsonEqual(t, []byte(r.body), `{"x":1,"y":2,"result":{"sum":3},"branch":"1 and 2"}`) {
			t.Fatalf("POST /workflow/default/branchy: %d %s", r.code, r.body)
		}
		out := k.OK(t, "wf", "run", "branchy", "-d", `{"x":3,"y":2}`)
		name := runCreated(out)
		run := c.waitRun(name, 3*time.Minute)
		if run.Status.Phase != minik8sv1.WorkflowRunSucceeded || !jsonEqual(t, run.Status.Output.Raw, `{"x":3,"y":2,"result":{"product":6},"branch":"3 and 2"}`) {
			t.Errorf("x > y: %s %s", run.Status.Phase, run.Status.Output.Bytes())
		}
		if got := stateNames(run); !slices.Equal(got, []string{"Compare", "Product", "Done"}) {
			t.Errorf("x > y went through %v, want Compare, Product, Done", got)
		}
		// The Fail state: the command fails, naming the error and cause.
		_, stderr, err := k.Run(t, "wf", "run", "branchy", "-d", `{"x":2,"y":2}`, "--wait")
		if err == nil || !strings.Contains(stderr, "EqualInputs") || !strings.Contains(stderr, "neither branch applies") {
			t.Errorf("x == y: err %v, stderr %q; want a failure naming EqualInputs and its cause", err, stderr)
		}
		r, err = call(hc, c.gateway+wfmeta.WorkflowPath("default", "branchy"), `{"x":2,"y":2}`)
		if err != nil || r.code != http.StatusInternalServerError || !strings.Contains(r.body, "EqualInputs") {
			t.Errorf("x == y over HTTP: %d %q %v, want 500 naming EqualInputs", r.code, r.body, err)
		}
		out = k.OK(t, "get", "workflowruns")
		for _, col := range []string{"NAME", "WORKFLOW", "STATUS", "STATE", "DURATION", "AGE", "Succeeded", "Failed", "branchy"} {
			if !strings.Contains(out, col) {
				t.Errorf("kubectl get workflowruns lacks %q:\n%s", col, out)
			}
		}
		out = k.OK(t, "describe", "workflowrun", name)
		for _, want := range []string{"Compare", "Product", "Done", "Entered", "product"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl describe workflowrun lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("digits pipeline", func(t *testing.T) {
		out := k.OK(t, "wf", "run", "digits", "-d", "@"+example("digits-0.json"), "--wait", "--timeout", "5m")
		var got struct {
			Digit   *int
			Verdict string
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Digit == nil || *got.Digit != 0 || got.Verdict != "accepted" {
			t.Errorf("digits-0: %q, want digit 0 accepted", out)
		}
		// A 0 and a 1 drawn over each other, given as 8 rows: the model is
		// unsure, and the Choice sends it to review.
		out = k.OK(t, "wf", "run", "digits", "-d", "@"+example("digits-blend.json"), "--wait")
		if !strings.Contains(out, "needs review") {
			t.Errorf("a 0 and a 1 blended: %q, want needs review", out)
		}
	})

	t.Run("retry and catch", func(t *testing.T) {
		key := fmt.Sprintf("k%d", time.Now().UnixNano())
		out := k.OK(t, "wf", "run", "retry", "-d", `{"key":"`+key+`"}`)
		run := c.waitRun(runCreated(out), 3*time.Minute)
		if run.Status.Phase != minik8sv1.WorkflowRunSucceeded {
			t.Fatalf("run %s: %s %s %s", run.Name, run.Status.Phase, run.Status.Error, run.Status.Cause)
		}
		var output struct {
			Flaky  struct{ Attempts int }
			Error  struct{ Error, Cause string }
			Status string
		}
		if err := json.Unmarshal(run.Status.Output.Raw, &output); err != nil || output.Flaky.Attempts != 3 ||
			output.Error.Error != "ValueError" || !strings.Contains(output.Error.Cause, "always fails") || output.Status != "recovered" {
			t.Errorf("output %s: want flaky's third attempt, broken's ValueError caught, status recovered", run.Status.Output.Bytes())
		}
		flaky := run.Status.History[0]
		if flaky.Name != "Flaky" || flaky.Attempts != 3 || len(flaky.Retries) != 2 {
			t.Fatalf("Flaky in the history: %+v, want 3 attempts and 2 retries", flaky)
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second} {
			if r := flaky.Retries[i]; r.Error != "RuntimeError" || r.Delay.Duration != want {
				t.Errorf("retry %d: %+v, want RuntimeError then a %v wait", i, r, want)
			}
		}
		if took := flaky.Exited.Sub(flaky.Entered.Time); took < 3*time.Second {
			t.Errorf("Flaky took %v with backoffs of 1s and 2s", took)
		}
		if b := run.Status.History[1]; b.Name != "Broken" || b.Error != "ValueError" || b.Next != "Recovered" {
			t.Errorf("Broken in the history: %+v, want ValueError caught to Recovered", b)
		}
		if out := k.OK(t, "wf", "get", run.Name); !strings.Contains(out, "Flaky") || !strings.Contains(out, "3") {
			t.Errorf("kubectl wf get %s:\n%s", run.Name, out)
		}
	})

	t.Run("parallel and map", func(t *testing.T) {
		// square keeps two instances warm: the Map's 8 calls at once are
		// spread over them (and more, as the autoscaler adds some).
		c.waitFor(2*time.Minute, "square's two warm instances", func(ctx context.Context) (bool, error) {
			fn, err := c.function(ctx, "square")
			return err == nil && fn.Status.ReadyInstances >= 2, nil
		})
		out := k.OK(t, "wf", "run", "fanout", "-d", `{"numbers": [1,2,3,4,5,6,7,8]}`, "--wait", "--timeout", "5m")
		var got struct {
			Squares   []int
			Instances []string
			Count     int
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || !slices.Equal(got.Squares, []int{1, 4, 9, 16, 25, 36, 49, 64}) || got.Count != 8 {
			t.Fatalf("fanout: %q, want the squares of 1..8 and count 8", out)
		}
		instances := map[string]bool{}
		for _, in := range got.Instances {
			instances[in] = true
		}
		if len(instances) < 2 {
			t.Errorf("the Map's 8 calls were answered by %d instance(s) %v, want several", len(instances), instances)
		}
		children, err := c.runs(ctx, wfmeta.ParentLabel)
		if err != nil || len(children) < 9 {
			t.Errorf("child runs: %d (%v), want a run per branch and per item", len(children), err)
		}
	})

	t.Run("triggers", func(t *testing.T) {
		k.OK(t, "apply", "-f", example("trigger-cron.yaml"))
		// HTTP: a webhook's body is the input of the run it starts.
		var r response
		c.waitFor(time.Minute, "the webhook trigger to answer", func(context.Context) (bool, error) {
			var err error
			r, err = call(hc, c.gateway+wfmeta.TriggerPath("default", "webhook"), `{"x":5,"y":7}`)
			return err == nil && r.code == http.StatusAccepted, nil
		})
		var started struct{ Run string }
		if err := json.Unmarshal([]byte(r.body), &started); err != nil || started.Run == "" {
			t.Fatalf("webhook answer %q", r.body)
		}
		run := c.waitRun(started.Run, 3*time.Minute)
		if run.Status.Phase != minik8sv1.WorkflowRunSucceeded || !jsonEqual(t, run.Status.Output.Raw, `{"x":5,"y":7,"result":{"sum":12},"branch":"5 and 7"}`) {
			t.Errorf("the webhook's run: %s %s %s", run.Status.Phase, run.Status.Output.Bytes(), run.Status.Cause)
		}
		// Event: a labelled ConfigMap created once the trigger watches.
		c.waitFor(time.Minute, "the event trigger watching ConfigMaps", func(context.Context) (bool, error) {
			out, _, err := k.Run(t, "get", "trigger", "on-order", "-o", "jsonpath={.status.conditions[0].status}")
			return err == nil && out == "True", nil
		})
		c.apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: order-1, labels: {app: orders}}
data: {item: book}
`)
		c.apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {item: none}
`)
		var orders []minik8sv1.WorkflowRun
		c.waitFor(time.Minute, "a run of orders started by the event trigger", func(ctx context.Context) (bool, error) {
			var err error
			orders, err = c.runs(ctx, wfmeta.TriggerLabel+"=on-order")
			return err == nil && len(orders) > 0 && wfmeta.Finished(orders[0].Status.Phase), nil
		})
		if len(orders) != 1 || !jsonEqual(t, orders[0].Status.Output.Raw, `{"name":"order-1","item":"book"}`) {
			t.Errorf("event trigger runs: %d, first output %s, want one with order-1's book", len(orders), orders[0].Status.Output.Bytes())
		}
		// Schedule: every minute; the first firing comes within a minute.
		var fired []minik8sv1.WorkflowRun
		c.waitFor(150*time.Second, "a run started by the schedule", func(ctx context.Context) (bool, error) {
			var err error
			fired, err = c.runs(ctx, wfmeta.TriggerLabel+"=every-minute")
			return err == nil && len(fired) > 0 && fired[0].Status.Phase == minik8sv1.WorkflowRunSucceeded, nil
		})
		if !jsonEqual(t, fired[0].Status.Output.Raw, `{"x":1,"steps":["inc","double","minus3"]}`) {
			t.Errorf("the scheduled run's output %s, want the chain of {x: 1}", fired[0].Status.Output.Bytes())
		}
		out := k.OK(t, "get", "triggers")
		for _, want := range []string{"every-minute", "on-order", "webhook", "workflow/chain"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get triggers lacks %q:\n%s", want, out)
			}
		}
		k.OK(t, "delete", "-f", example("trigger-cron.yaml"))
	})
}
