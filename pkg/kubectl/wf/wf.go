package wf

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// How kubectl get names the kinds.
var (
	workflowsResource    = wfmeta.WorkflowResource.Resource + "." + wfmeta.WorkflowResource.Group
	workflowRunsResource = wfmeta.WorkflowRunResource.Resource + "." + wfmeta.WorkflowRunResource.Group
)

// NewCommand is `wf` and its subcommands. f reads the kubeconfig flags
// of the command it is added to: a kubectl tree, or the plugin's root
// (NewPluginCommand).
func NewCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wf",
		Short: "Run workflows and follow their runs",
		Long: `Run workflows and follow their runs (minik8s.io/v1 Workflow and WorkflowRun).

A workflow is a state machine in the Amazon States Language whose Task states call the
namespace's functions and workflows. Each execution of it, with an input, is a
WorkflowRun; the workflow engine executes it and records every state it enters in the
run's status.history.`,
		Example: `  kubectl apply -f order.yaml
  kubectl wf run order -d '{"item": "book", "qty": 2}' --wait
  kubectl wf get
  kubectl wf get order-x7k2p
  kubectl wf logs order-x7k2p -f
  kubectl wf list`,
	}
	cmd.AddCommand(
		newRunCommand(f, streams),
		newGetCommand(f, streams),
		newLogsCommand(f, streams),
		newListCommand(f, streams),
	)
	// Errors go back to the caller, which prints them once, as kubectl
	// does (cmdutil.CheckErr); cobra does not print them as well.
	for _, sub := range cmd.Commands() {
		sub.SilenceErrors, sub.SilenceUsage = true, true
	}
	return cmd
}

// NewPluginCommand is kubectl-wf, the kubectl plugin: NewCommand with the
// standard kubectl flags (--kubeconfig, -n, --context, ...) of its own.
// Its errors are returned, not printed: main prints them as kubectl does.
func NewPluginCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).WithWarningPrinter(streams)
	cmd := NewCommand(cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(flags)), streams)
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl wf"}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	flags.AddFlags(cmd.PersistentFlags())
	return cmd
}

// newListCommand is `kubectl get workflows` with all of get's flags
// (-o, -w, -l, -A, ...), so the server's columns print.
func newListCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := get.NewCmdGet("kubectl", f, streams)
	run := cmd.Run
	cmd.Use = "list [NAME ...] [flags]"
	cmd.Aliases = []string{"ls"}
	cmd.Short = "List workflows (kubectl get workflows)"
	cmd.Long = "List workflows, as kubectl get workflows does, with the same flags."
	cmd.Example = `  kubectl wf list
  kubectl wf ls order -o yaml
  kubectl wf list -A -w`
	cmd.SuggestFor = nil
	cmd.ValidArgsFunction = nil
	cmd.Run = func(c *cobra.Command, args []string) { run(c, append([]string{workflowsResource}, args...)) }
	return cmd
}

// runFromUnstructured reads a WorkflowRun the dynamic client returned.
func runFromUnstructured(u *unstructured.Unstructured) (*minik8sv1.WorkflowRun, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("read workflowrun %s: %w", u.GetName(), err)
	}
	run := &minik8sv1.WorkflowRun{}
	if err := json.Unmarshal(data, run); err != nil {
		return nil, fmt.Errorf("read workflowrun %s: %w", u.GetName(), err)
	}
	return run, nil
}
