// Command kubectl-fn is the kubectl plugin for serverless functions
// (`kubectl fn ...` with any kubectl): see pkg/kubectl/fn.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/kubectl/fn"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := fn.NewPluginCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctx); err != nil {
		cmdutil.CheckErr(err)
	}
}
