package proxy

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// TestKernelTrafficPolicies: the rules of every traffic policy case are
// accepted by the real nft and iptables-restore, one case after another
// as incremental syncs of one Service, and each incremental sync leaves
// what a full sync of the same Service leaves.
func TestKernelTrafficPolicies(t *testing.T) {
	for _, mode := range []Mode{ModeNFTables, ModeIPTables} {
		t.Run(string(mode), func(t *testing.T) {
			p, netns := kernelProxier(t, mode)
			p.cfg.NodeName = "n1"
			ctx := context.Background()
			list := func() string {
				var out []byte
				err := network.InNetNS(netns, func() (err error) {
					if mode == ModeNFTables {
						out, err = exec.Command("nft", "list", "table", "ip", TableName).CombinedOutput()
					} else {
						out, err = exec.Command("iptables-save").CombinedOutput()
					}
					return err
				})
				if err != nil {
					t.Fatalf("list rules: %v: %s", err, out)
				}
				// Without iptables-save's dates and counters, sorted.
				var lines []string
				for _, l := range strings.Split(string(out), "\n") {
					if mode == ModeNFTables || strings.HasPrefix(l, "-A") || strings.HasPrefix(l, ":") {
						lines = append(lines, l)
					}
				}
				if mode == ModeIPTables {
					slices.Sort(lines)
				}
				return strings.Join(lines, "\n")
			}
			for _, tc := range policyCases {
				svcs, eps := tc.objects()
				if err := p.sync(ctx, svcs, eps, false); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				incremental := list()
				if err := p.sync(ctx, svcs, eps, true); err != nil {
					t.Fatalf("%s, full: %v", tc.name, err)
				}
				if full := list(); full != incremental {
					t.Errorf("%s: incremental sync left\n%s\n\nwhere a full sync leaves\n%s", tc.name, incremental, full)
				}
				if strings.HasPrefix(tc.name, "external Local NodePort without endpoints here") {
					// External Local without endpoints here: the kernel
					// holds the drops and the short circuit.
					for _, w := range map[Mode][]string{
						ModeNFTables: {"fib saddr type local goto svc-", "\t\tdrop\n"},
						ModeIPTables: {"-m addrtype --src-type LOCAL -g MINIK8S-SVC-", "-j MINIK8S-MARK-DROP", "-m mark --mark 0x8000/0x8000 -j DROP"},
					}[mode] {
						if !strings.Contains(incremental+"\n", w) {
							t.Errorf("%s: the kernel lacks %q:\n%s", tc.name, w, incremental)
						}
					}
				}
			}
		})
	}
}
