package fn

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/delete"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// functionsResource is how get and delete name the kind.
var functionsResource = fnmeta.Resource.Resource + "." + fnmeta.Resource.Group

// NewCommand is `fn` and its subcommands. f reads the kubeconfig flags
// of the command it is added to: kubectl's own tree, or the plugin's
// root (NewPluginCommand).
func NewCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Deploy, invoke and watch serverless Python functions",
		Long: `Deploy, invoke and watch serverless Python functions (minik8s.io/v1 Function).

A function is Python code served over HTTP at /function/<namespace>/<name> on the
cluster's gateway; its instances are pods, scaled with the requests, from and to zero.`,
		Example: `  kubectl fn deploy add --runtime python3 --handler main.handle -f ./add/
  kubectl fn invoke add -d '{"a": 1, "b": 2}'
  kubectl fn list -w
  kubectl fn logs add -f
  kubectl fn delete add`,
	}
	cmd.AddCommand(
		newDeployCommand(f, streams),
		newInvokeCommand(f, streams),
		newLogsCommand(f, streams),
		newListCommand(f, streams),
		newDeleteCommand(f, streams),
	)
	return cmd
}

// NewPluginCommand is kubectl-fn, the kubectl plugin: NewCommand with the
// standard kubectl flags (--kubeconfig, -n, --context, ...) of its own.
func NewPluginCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).WithWarningPrinter(streams)
	cmd := NewCommand(cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(flags)), streams)
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fn"}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SilenceUsage = true
	flags.AddFlags(cmd.PersistentFlags())
	return cmd
}

// newListCommand is `kubectl get functions` with all of get's flags
// (-o, -w, -l, -A, ...), so the server's columns print.
func newListCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := get.NewCmdGet("kubectl", f, streams)
	run := cmd.Run
	cmd.Use = "list [NAME ...] [flags]"
	cmd.Aliases = []string{"ls", "get"}
	cmd.Short = "List functions (kubectl get functions)"
	cmd.Long = "List functions, as kubectl get functions does, with the same flags."
	cmd.Example = `  kubectl fn list
  kubectl fn list greet -o yaml
  kubectl fn list -w`
	cmd.SuggestFor = nil
	cmd.ValidArgsFunction = nil
	cmd.Run = func(c *cobra.Command, args []string) { run(c, append([]string{functionsResource}, args...)) }
	return cmd
}

// newDeleteCommand is `kubectl delete functions NAME...` with delete's flags.
func newDeleteCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := delete.NewCmdDelete(f, streams)
	run := cmd.Run
	cmd.Use = "delete NAME ... [flags]"
	cmd.Short = "Delete functions, with their instances, source and images"
	cmd.Long = "Delete functions, as kubectl delete functions does, with the same flags."
	cmd.Example = `  kubectl fn delete greet`
	cmd.SuggestFor = nil
	cmd.ValidArgsFunction = nil
	cmd.Run = func(c *cobra.Command, args []string) { run(c, append([]string{functionsResource}, args...)) }
	return cmd
}
