package wf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// runOptions are run's flags.
type runOptions struct {
	data    string
	name    string
	wait    bool
	timeout time.Duration
	print   *genericclioptions.PrintFlags
}

func newRunCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &runOptions{print: genericclioptions.NewPrintFlags("created")}
	cmd := &cobra.Command{
		Use:   "run WORKFLOW [-d JSON | -d @FILE | -d @-] [--name NAME] [--wait [--timeout 5m]] [-o json|yaml|name] [flags]",
		Short: "Start a run of a workflow, and wait for its output",
		Long: `Start a run of a workflow with an input: create a WorkflowRun, named <workflow>-<random>
unless --name is given, that the workflow engine executes.

The input is JSON: given inline, read from a file with @FILE, or from stdin with @- (or -);
it is {} without -d. Without --wait, run prints the new run's name. With --wait, it waits
until the run ends and prints its output; a run that fails, times out or is aborted prints
its error and cause and run exits 1. -o prints the whole run instead (the final one with
--wait).`,
		Example: `  kubectl wf run order -d '{"item": "book", "qty": 2}'
  kubectl wf run order -d @order.json --wait --timeout 5m
  echo '{"item": "pen"}' | kubectl wf run order -d @- --wait -o yaml
  kubectl wf run nightly --name nightly-2024-06-01`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), f, streams, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.data, "data", "d", "", "The run's input, JSON: DATA, @FILE, or @- for stdin (default {})")
	fl.StringVar(&o.name, "name", "", "The run's name (default <workflow>-<random>)")
	fl.BoolVar(&o.wait, "wait", false, "Wait until the run ends, print its output, and exit 1 unless it succeeded")
	fl.DurationVar(&o.timeout, "timeout", 0, "With --wait, the longest to wait (0: no limit)")
	o.print.AddFlags(cmd)
	return cmd
}

func (o *runOptions) run(ctx context.Context, f cmdutil.Factory, streams genericiooptions.IOStreams, workflow string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	input, err := ParseInput(o.data, streams.In)
	if err != nil {
		return err
	}
	if o.timeout != 0 && !o.wait {
		return errors.New("--timeout needs --wait")
	}
	printer, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	created, err := Start(ctx, dyn, RunRequest{Namespace: ns, Workflow: workflow, Name: o.name, Input: input})
	if err != nil {
		return err
	}
	if !o.wait {
		return printer.PrintObj(created, streams.Out)
	}
	wctx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	u, run, err := Wait(wctx, dyn, ns, created.GetName())
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			phase := "Pending"
			if run != nil && run.Status.Phase != "" {
				phase = run.Status.Phase
			}
			return fmt.Errorf("timed out after %s waiting for workflowrun %s to finish (it is %s)", o.timeout, created.GetName(), phase)
		}
		return err
	}
	if *o.print.OutputFormat != "" {
		if err := printer.PrintObj(u, streams.Out); err != nil {
			return err
		}
	} else if run.Status.Phase == minik8sv1.WorkflowRunSucceeded {
		if err := writePretty(streams.Out, run.Status.Output.Bytes()); err != nil {
			return err
		}
	}
	return RunResult(run)
}

// ParseInput reads -d: the JSON itself, @FILE, or @- (or -) for stdin;
// {} without -d. It must be one JSON value; it comes back compacted.
func ParseInput(data string, stdin io.Reader) ([]byte, error) {
	var raw []byte
	what := "-d"
	switch {
	case data == "":
		return []byte("{}"), nil
	case data == "-" || data == "@-":
		what = "-d " + data + " (stdin)"
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		raw = b
	case strings.HasPrefix(data, "@"):
		what = "-d " + data
		b, err := os.ReadFile(data[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		raw = b
	default:
		raw = []byte(data)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s: the input is empty, want JSON (such as {})", what)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: the input is not valid JSON: %w", what, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s: the input is not valid JSON: %w", what, err)
	}
	return buf.Bytes(), nil
}

// RunRequest is one run to start.
type RunRequest struct {
	Namespace, Workflow string
	// Name is the run's name; empty, the server makes one up from "<workflow>-".
	Name string
	// Input is the run's input, JSON.
	Input []byte
}

// Start creates the WorkflowRun of r, once it has checked that the
// workflow exists, and returns it as the server has it.
func Start(ctx context.Context, dyn dynamic.Interface, r RunRequest) (*unstructured.Unstructured, error) {
	if _, err := dyn.Resource(wfmeta.WorkflowResource).Namespace(r.Namespace).Get(ctx, r.Workflow, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	run := &minik8sv1.WorkflowRun{
		TypeMeta: metav1.TypeMeta{APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "WorkflowRun"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.Namespace,
			Labels:    map[string]string{wfmeta.WorkflowLabel: r.Workflow},
		},
		Spec: minik8sv1.WorkflowRunSpec{Workflow: r.Workflow, Input: minik8sv1.NewJSON(r.Input)},
	}
	if r.Name != "" {
		run.Name = r.Name
	} else {
		run.GenerateName = r.Workflow + "-"
	}
	data, err := json.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("run workflow %s/%s: %w", r.Namespace, r.Workflow, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("run workflow %s/%s: %w", r.Namespace, r.Workflow, err)
	}
	return dyn.Resource(wfmeta.WorkflowRunResource).Namespace(r.Namespace).Create(ctx, u, metav1.CreateOptions{})
}

// Wait watches the run until its phase is final and returns it. When ctx
// ends first, it returns the last run it saw with ctx's error.
func Wait(ctx context.Context, dyn dynamic.Interface, ns, name string) (*unstructured.Unstructured, *minik8sv1.WorkflowRun, error) {
	var lastU *unstructured.Unstructured
	var last *minik8sv1.WorkflowRun
	err := watchRun(ctx, dyn.Resource(wfmeta.WorkflowRunResource).Namespace(ns), ns, name, func(u *unstructured.Unstructured, run *minik8sv1.WorkflowRun) bool {
		lastU, last = u, run
		return wfmeta.Finished(run.Status.Phase)
	})
	return lastU, last, err
}

// RunError is a run that ended other than Succeeded.
type RunError struct {
	Name, Phase string
	// Err and Cause are the run's status.error and status.cause.
	Err, Cause string
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("workflowrun %s %s", e.Name, e.Phase)
	if e.Err != "" {
		msg += ": " + e.Err
	}
	if e.Cause != "" {
		msg += ": " + e.Cause
	}
	return msg
}

// RunResult is nil for a run that Succeeded, a *RunError for one that
// ended otherwise.
func RunResult(run *minik8sv1.WorkflowRun) error {
	if run.Status.Phase == minik8sv1.WorkflowRunSucceeded {
		return nil
	}
	return &RunError{Name: run.Name, Phase: run.Status.Phase, Err: run.Status.Error, Cause: run.Status.Cause}
}

// watchRun calls visit with the run now and each time it changes, until
// visit says done or ctx ends (its error is returned). A watch the server
// ends is started again from a fresh read.
func watchRun(ctx context.Context, ri dynamic.ResourceInterface, ns, name string, visit func(*unstructured.Unstructured, *minik8sv1.WorkflowRun) (done bool)) error {
	see := func(u *unstructured.Unstructured) (bool, error) {
		run, err := runFromUnstructured(u)
		if err != nil {
			return false, err
		}
		return visit(u, run), nil
	}
	for {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if done, err := see(u); done || err != nil {
			return err
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: u.GetResourceVersion()})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watch workflowrun %s/%s: %w", ns, name, err)
		}
		done, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return true, ctx.Err()
				case ev, ok := <-w.ResultChan():
					if !ok || ev.Type == watch.Error {
						return false, nil
					}
					if ev.Type == watch.Deleted {
						return true, fmt.Errorf("workflowrun %s/%s was deleted", ns, name)
					}
					if u, isU := ev.Object.(*unstructured.Unstructured); isU {
						if done, err := see(u); done || err != nil {
							return true, err
						}
					}
				}
			}
		}()
		if done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// writePretty writes JSON indented, with a final newline.
func writePretty(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}
