package engine

import (
	"context"
	"fmt"
	"net/http"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
)

// pollCall is the result of the current attempt's function call, once it
// has one. A call left from an earlier attempt is dropped.
func (c *RunController) pollCall(key string, run *minik8sv1.WorkflowRun, x *asl.Execution) (asl.Result, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.inflight[key]
	if cl == nil {
		return asl.Result{}, false, nil
	}
	if cl.uid != run.UID || cl.id != workID(x) {
		cl.cancel()
		delete(c.inflight, key)
		return asl.Result{}, false, nil
	}
	if !cl.done {
		return asl.Result{}, false, nil
	}
	return cl.result, true, nil
}

// startCall calls the function of x's Task unless this attempt's call is
// under way or answered; its answer queues the run.
func (c *RunController) startCall(key string, run *minik8sv1.WorkflowRun, x *asl.Execution, function string) {
	id := workID(x)
	c.mu.Lock()
	if cl := c.inflight[key]; cl != nil && cl.uid == run.UID && cl.id == id {
		c.mu.Unlock()
		return
	}
	if old := c.inflight[key]; old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	if t := x.Work.Timeout; t > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), t)
	}
	cl := &call{uid: run.UID, id: id, cancel: cancel}
	c.inflight[key] = cl
	c.mu.Unlock()

	input := []byte(x.Work.Input)
	if len(input) == 0 {
		input = []byte("null")
	}
	header := http.Header{"X-Minik8s-Workflow-Run": {run.Name}, "X-Minik8s-Workflow-State": {x.State}}
	go func() {
		c.calls <- struct{}{}
		defer func() { <-c.calls }()
		r := c.invoke(ctx, run.Namespace, function, input, header)
		c.mu.Lock()
		if c.inflight[key] == cl {
			cl.done, cl.result = true, r
		}
		c.mu.Unlock()
		cancel()
		c.Queue.Add(key)
	}()
}

func (c *RunController) invoke(ctx context.Context, namespace, function string, input []byte, header http.Header) asl.Result {
	resp, err := c.cfg.Invoker.Invoke(ctx, namespace, function, input, header)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return asl.Result{Error: invoke.ErrTimeout, Cause: fmt.Sprintf("function %s did not answer within the Task's TimeoutSeconds", function)}
		}
		return asl.Result{Error: invoke.ErrTaskFailed, Cause: err.Error()}
	}
	out, failure := invoke.Outcome(resp)
	if failure != nil {
		return asl.Result{Error: failure.Name, Cause: failure.Cause}
	}
	return asl.Result{Output: out}
}

func (c *RunController) cancelCall(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.inflight[key]; cl != nil {
		cl.cancel()
		delete(c.inflight, key)
	}
}

func (c *RunController) cancelAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, cl := range c.inflight {
		cl.cancel()
		delete(c.inflight, key)
	}
}
