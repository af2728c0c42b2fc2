package kubectl

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/plugin"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/kubectl/fn"
	"github.com/minik8s/minik8s/pkg/kubectl/wf"
)

// NewCommand builds the kubectl command tree. args are the full command
// line including the program name (plugins are looked up from them).
// minik8s' own commands (fn, wf) are part of the tree and read the same
// kubeconfig flags; other kubectls reach them as plugins (bin/kubectl-fn,
// bin/kubectl-wf).
func NewCommand(streams genericiooptions.IOStreams, args []string) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).WithWarningPrinter(streams)
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{
		Arguments:   args,
		ConfigFlags: flags,
		IOStreams:   streams,
	})
	factory := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(flags))
	cmd.AddCommand(fn.NewCommand(factory, streams), wf.NewCommand(factory, streams))
	if len(args) > 1 {
		runPlugin(cmd, kubectlcmd.NewDefaultPluginHandler(plugin.ValidPluginFilenamePrefixes), args[1:], streams)
		cmd.SetArgs(args[1:])
	}
	return cmd
}

// runPlugin runs the plugin args name, as kubectl's
// NewDefaultKubectlCommandWithArgs does, but once minik8s' commands are
// in the tree: `kubectl -n x fn ...` is our fn, not a plugin lookup that
// fails on the flags before the name. Running a plugin replaces the
// process; finding none returns.
func runPlugin(cmd *cobra.Command, handler kubectlcmd.PluginHandler, args []string, streams genericiooptions.IOStreams) {
	found, foundArgs, err := cmd.Find(args)
	minArgs := 1
	switch {
	case err != nil:
		name := ""
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				name = a
				break
			}
		}
		if name == "help" || name == cobra.ShellCompRequestCmd || name == cobra.ShellCompNoDescRequestCmd {
			return
		}
	case kubectlcmd.IsSubcommandPluginAllowed(found.Name()) && len(foundArgs) > 0 && !strings.HasPrefix(foundArgs[0], "-"):
		// kubectl create <plugin>: only when create has no such subcommand.
		for _, sub := range found.Commands() {
			if sub.Name() == foundArgs[0] {
				return
			}
		}
		minArgs = len(args) - len(foundArgs) + 1
	default:
		return
	}
	if err := kubectlcmd.HandlePluginCommand(handler, args, minArgs); err != nil {
		fmt.Fprintf(streams.ErrOut, "Error: %v\n", err)
		os.Exit(1)
	}
}
