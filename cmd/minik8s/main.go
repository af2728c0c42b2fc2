// Command minik8s is the multi-call binary of a minik8s cluster: see pkg/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
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
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
