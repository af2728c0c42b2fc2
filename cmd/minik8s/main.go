// Command minik8s is the multi-call binary of a minik8s cluster: see pkg/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	// CronJobs' spec.timeZone works on hosts without zone files.
	_ "time/tzdata"

	"github.com/minik8s/minik8s/pkg/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		// One line, naming the part that failed: "minik8s: apiserver: listen tcp ...".
		fmt.Fprintln(os.Stderr, "minik8s:", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		os.Exit(1)
	}
}
