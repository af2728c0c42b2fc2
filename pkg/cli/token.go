package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/controlplane"
)

type tokenCreateFlags struct {
	kubeconfig  string
	ttl         time.Duration
	description string
	groups      []string
}

func tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens that nodes join with",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(tokenCreateCommand())
	return cmd
}

func tokenCreateCommand() *cobra.Command {
	f := &tokenCreateFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print it as a join token (K10<ca-hash>::<id>.<secret>)",
		Long: `Creates a bootstrap token Secret (kube-system/bootstrap-token-<id>) through the API
and prints the join token for "minik8s agent --server URL --token TOKEN".
The token authenticates as system:bootstrap:<id> in system:bootstrappers until it
expires; delete the Secret to revoke it earlier.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
			if err != nil {
				return err
			}
			caPEM := rc.TLSClientConfig.CAData
			if len(caPEM) == 0 && rc.TLSClientConfig.CAFile != "" {
				if caPEM, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
					return err
				}
			}
			if len(caPEM) == 0 {
				return errors.New("the kubeconfig names no cluster CA: a join token carries its hash")
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			j, err := token.CreateJoin(cmd.Context(), client, caPEM, token.Options{
				TTL: f.ttl, Description: f.description, ExtraGroups: f.groups,
			}, time.Now())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), j)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", filepath.Join("/var/lib/minik8s", controlplane.KubeconfigName), "an admin kubeconfig")
	fl.DurationVar(&f.ttl, "ttl", 24*time.Hour, "how long the token is valid (0: forever)")
	fl.StringVar(&f.description, "description", "", "what the token is for")
	fl.StringSliceVar(&f.groups, "groups", []string{token.NodeGroup}, "extra groups (system:bootstrappers:...)")
	return cmd
}
