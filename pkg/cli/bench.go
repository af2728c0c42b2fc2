package cli

import "github.com/spf13/cobra"

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure a running or in-process cluster"}
	return cmd
}
