// Command kubectl is minik8s' kubectl: see pkg/kubectl.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/kubectl"
)

func main() {
	cmd := kubectl.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args)
	if err := cmd.Execute(); err != nil {
		cmdutil.CheckErr(err)
	}
}
