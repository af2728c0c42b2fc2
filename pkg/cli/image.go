package cli

import (
	"fmt"
	"os"

	"github.com/containerd/containerd"
	"github.com/spf13/cobra"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

func imageCommand() *cobra.Command {
	var address string
	cmd := &cobra.Command{Use: "image", Short: "Local images: no registry needed"}
	cmd.PersistentFlags().StringVar(&address, "containerd", daemon.DefaultAddress, "containerd socket")
	cmd.AddCommand(&cobra.Command{
		Use:   "import TARBALL...",
		Short: "Import OCI or docker-archive tarballs into minik8s' containerd namespace",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := containerd.New(address)
			if err != nil {
				return fmt.Errorf("containerd at %s: %w", address, err)
			}
			defer client.Close()
			for _, path := range args {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				names, err := image.Import(cmd.Context(), client, image.Namespace, f)
				f.Close()
				if err != nil {
					return fmt.Errorf("import %s: %w", path, err)
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "builtin",
		Short: "Build and import the built-in images (busybox from busybox-static, pause) when missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return image.EnsureBuiltin(cmd.Context(), address)
		},
	})
	return cmd
}
