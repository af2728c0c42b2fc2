package wf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// logsOptions are logs' flags.
type logsOptions struct {
	follow bool
}

func newLogsCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs RUN [-f] [flags]",
		Short: "Print a workflow run's history as log lines",
		Long: `Print a workflow run's history as log lines, one per event, oldest first: each state
entered (with its input), each failed attempt that was retried, each state left (with its
output, or its error and cause), and a last line with the run's phase and its output or
error once it has ended. Times are UTC, RFC 3339 with milliseconds.

With -f, the run is watched and new lines are printed as they come, until it ends.`,
		Example: `  kubectl wf logs order-x7k2p
  kubectl wf logs order-x7k2p -f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), f, streams, args[0])
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "Follow the run until it ends")
	return cmd
}

func (o *logsOptions) run(ctx context.Context, f cmdutil.Factory, streams genericiooptions.IOStreams, name string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	return Logs(ctx, dyn, LogOptions{Namespace: ns, Name: name, Follow: o.follow}, streams.Out)
}

// LogOptions say which run's history Logs prints, and how.
type LogOptions struct {
	Namespace, Name string
	Follow          bool
}

// Logs prints the run's history as log lines (LogLines) to out.
// Following, it prints the new lines as the run changes, until it ends or
// ctx does.
func Logs(ctx context.Context, dyn dynamic.Interface, o LogOptions, out io.Writer) error {
	printed := map[string]bool{}
	var werr error
	err := watchRun(ctx, dyn.Resource(wfmeta.WorkflowRunResource).Namespace(o.Namespace), o.Namespace, o.Name, func(_ *unstructured.Unstructured, run *minik8sv1.WorkflowRun) bool {
		for _, l := range LogLines(run) {
			if printed[l.Key] {
				continue
			}
			printed[l.Key] = true
			if _, werr = io.WriteString(out, l.Text+"\n"); werr != nil {
				return true
			}
		}
		return !o.Follow || wfmeta.Finished(run.Status.Phase)
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Interrupted while following.
		return werr
	}
	if err != nil {
		return err
	}
	return werr
}

// LogLine is one line of a run's log; Key tells it from the others, so a
// line printed once is not printed again.
type LogLine struct {
	Key, Text string
}

// LogLines are the events of run's history, oldest first, ending with the
// run's result once it has ended.
func LogLines(run *minik8sv1.WorkflowRun) []LogLine {
	st := &run.Status
	var lines []LogLine
	add := func(key string, at time.Time, format string, args ...any) {
		lines = append(lines, LogLine{Key: key, Text: formatLogTime(at) + " " + fmt.Sprintf(format, args...)})
	}
	for i := range st.History {
		s := &st.History[i]
		key := fmt.Sprintf("%s@%d", s.Name, s.Entered.UnixNano())
		add(key+"/entered", s.Entered.Time, "%s (%s) entered input=%s", s.Name, s.Type, s.Input.Bytes())
		for n, r := range s.Retries {
			add(fmt.Sprintf("%s/retry/%d", key, n), r.At.Time, "%s attempt %d failed %s; retrying in %s", s.Name, n+1, r.Error, r.Delay.Duration)
		}
		var exited time.Time
		switch {
		case s.Exited != nil:
			exited = s.Exited.Time
		case s.Error != "":
			_, exited = runBounds(st)
		}
		switch {
		case s.Error != "":
			add(key+"/exited", exited, "%s failed %s", s.Name, errorAndCause(s.Error, s.Cause))
		case s.Exited != nil:
			add(key+"/exited", exited, "%s succeeded output=%s", s.Name, s.Output.Bytes())
		}
	}
	if wfmeta.Finished(st.Phase) {
		_, at := runBounds(st)
		if st.Phase == minik8sv1.WorkflowRunSucceeded {
			add("run/end", at, "workflowrun %s %s output=%s", run.Name, st.Phase, st.Output.Bytes())
		} else {
			add("run/end", at, "%s", strings.Join(nonEmpty("workflowrun", run.Name, st.Phase, errorAndCause(st.Error, st.Cause)), " "))
		}
	}
	return lines
}

// formatLogTime is t in UTC, RFC 3339 with milliseconds; "-" when unknown.
func formatLogTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// errorAndCause is "error: cause", or whichever of them there is.
func errorAndCause(e, cause string) string {
	return strings.Join(nonEmpty(e, cause), ": ")
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
