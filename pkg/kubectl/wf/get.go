package wf

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// newGetCommand is `kubectl get workflowruns` with all of get's flags,
// plus --workflow; one run without -o or -w is summarised instead, with
// the states it went through.
func newGetCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := get.NewCmdGet("kubectl", f, streams)
	run := cmd.Run
	var workflow string
	cmd.Use = "get [RUN ...] [--workflow NAME] [-o json|yaml|wide|name] [flags]"
	cmd.Aliases = nil
	cmd.Short = "List workflow runs, or show one run and the states it went through"
	cmd.Long = `List workflow runs, as kubectl get workflowruns does, with the same flags; --workflow
keeps the runs of one workflow (field spec.workflow).

Given one RUN (and no -o or -w), show its summary (workflow, phase, start, duration, output
or error and cause) and its history: each state entered, with its type, when it started,
how long it took, its attempts, and its result ("ok" or the error's name).`
	cmd.Example = `  kubectl wf get
  kubectl wf get --workflow order -w
  kubectl wf get order-x7k2p
  kubectl wf get order-x7k2p -o yaml`
	cmd.SuggestFor = nil
	cmd.ValidArgsFunction = nil
	cmd.Run = nil
	cmd.RunE = func(c *cobra.Command, args []string) error {
		fl := c.Flags()
		if len(args) == 1 && !fl.Changed("output") && !fl.Changed("watch") && !fl.Changed("watch-only") {
			return describeRun(c.Context(), f, streams.Out, args[0])
		}
		if workflow != "" {
			// By spec.workflow, which every run of the workflow has,
			// however it was started (a label is only what its starter set).
			sel := "spec.workflow=" + workflow
			if s, _ := fl.GetString("field-selector"); s != "" {
				sel = s + "," + sel
			}
			if err := fl.Set("field-selector", sel); err != nil {
				return err
			}
		}
		run(c, append([]string{workflowRunsResource}, args...))
		return nil
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "Only the runs of this workflow")
	return cmd
}

func describeRun(ctx context.Context, f cmdutil.Factory, out io.Writer, name string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	u, err := dyn.Resource(wfmeta.WorkflowRunResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	run, err := runFromUnstructured(u)
	if err != nil {
		return err
	}
	return Describe(out, run, time.Now())
}

// Describe writes run's summary and its history table; now is the end of
// a run that has not ended, for its duration.
func Describe(out io.Writer, run *minik8sv1.WorkflowRun, now time.Time) error {
	st := &run.Status
	w := printers.GetNewTabWriter(out)
	field := func(k, v string) { _, _ = fmt.Fprintf(w, "%s:\t%s\n", k, v) }
	field("Name", run.Name)
	field("Namespace", run.Namespace)
	workflow := run.Spec.Workflow
	if workflow == "" {
		workflow = "<inline definition>"
	}
	field("Workflow", workflow)
	phase := st.Phase
	if phase == "" {
		phase = minik8sv1.WorkflowRunPending
	}
	field("Phase", phase)
	if st.CurrentState != "" && !wfmeta.Finished(st.Phase) {
		field("Current State", st.CurrentState)
	}
	start, end := runBounds(st)
	field("Started", formatLogTime(start))
	switch {
	case start.IsZero():
		field("Duration", "-")
	case !end.IsZero():
		field("Duration", formatDuration(end.Sub(start)))
	default:
		field("Duration", formatDuration(now.Sub(start))+" (running)")
	}
	field("Input", string(runInput(run)))
	switch {
	case st.Phase == minik8sv1.WorkflowRunSucceeded:
		field("Output", string(st.Output.Bytes()))
	case st.Error != "" || st.Cause != "":
		field("Error", orDash(st.Error))
		field("Cause", orDash(st.Cause))
	}
	if len(st.History) == 0 {
		field("History", "<none>")
		return w.Flush()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := io.WriteString(out, "\n"); err != nil {
		return err
	}
	return WriteHistory(out, st.History)
}

// WriteHistory writes the states of a run's history as a table: STATE
// TYPE STARTED DURATION ATTEMPTS RESULT.
func WriteHistory(out io.Writer, history []minik8sv1.WorkflowRunState) error {
	w := printers.GetNewTabWriter(out)
	_, _ = fmt.Fprintln(w, "STATE\tTYPE\tSTARTED\tDURATION\tATTEMPTS\tRESULT")
	for i := range history {
		s := &history[i]
		duration := "-"
		if s.Exited != nil {
			duration = formatDuration(s.Exited.Sub(s.Entered.Time))
		}
		attempts := "-"
		if s.Attempts > 0 {
			attempts = strconv.Itoa(int(s.Attempts))
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Type, s.Entered.UTC().Format("15:04:05.000"), duration, attempts, stateResult(s))
	}
	return w.Flush()
}

// stateResult is "ok" for a state that exited well, its error's name for
// one that failed, "running" for one not exited.
func stateResult(s *minik8sv1.WorkflowRunState) string {
	switch {
	case s.Error != "":
		return s.Error
	case s.Exited != nil:
		return "ok"
	}
	return "running"
}

// runBounds are when the run started and ended (zero until it has), to
// the millisecond where its history says: startTime and completionTime
// are kept to the second only.
func runBounds(st *minik8sv1.WorkflowRunStatus) (start, end time.Time) {
	if st.StartTime != nil {
		start = st.StartTime.Time
	}
	if len(st.History) > 0 && !st.History[0].Entered.IsZero() {
		start = st.History[0].Entered.Time
	}
	if !wfmeta.Finished(st.Phase) {
		return start, time.Time{}
	}
	if st.CompletionTime != nil {
		end = st.CompletionTime.Time
	}
	later := func(t time.Time) {
		if t.After(end) {
			end = t
		}
	}
	for i := range st.History {
		s := &st.History[i]
		later(s.Entered.Time)
		for _, r := range s.Retries {
			later(r.At.Time)
		}
		if s.Exited != nil {
			later(s.Exited.Time)
		}
	}
	return start, end
}

// runInput is the run's input, {} when it has none.
func runInput(run *minik8sv1.WorkflowRun) []byte {
	if run.Spec.Input == nil {
		return []byte("{}")
	}
	return run.Spec.Input.Bytes()
}

// timeLayout is RFC 3339 with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatDuration rounds d to the millisecond.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
