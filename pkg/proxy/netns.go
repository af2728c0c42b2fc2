package proxy

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/knftables"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// nsNFT runs every nft command of an Interface inside a network
// namespace: knftables executes nft, and a process started from a thread
// that joined the namespace lives in it.
type nsNFT struct {
	knftables.Interface
	netns string
}

var _ knftables.Interface = nsNFT{}

func (n nsNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	return network.InNetNS(n.netns, func() error { return n.Interface.Run(ctx, tx) })
}

func (n nsNFT) Check(ctx context.Context, tx *knftables.Transaction) error {
	return network.InNetNS(n.netns, func() error { return n.Interface.Check(ctx, tx) })
}

func (n nsNFT) List(ctx context.Context, objectType string) (out []string, err error) {
	err = network.InNetNS(n.netns, func() error {
		out, err = n.Interface.List(ctx, objectType)
		return err
	})
	return out, err
}

func (n nsNFT) ListRules(ctx context.Context, chain string) (out []*knftables.Rule, err error) {
	err = network.InNetNS(n.netns, func() error {
		out, err = n.Interface.ListRules(ctx, chain)
		return err
	})
	return out, err
}

func (n nsNFT) ListElements(ctx context.Context, objectType, name string) (out []*knftables.Element, err error) {
	err = network.InNetNS(n.netns, func() error {
		out, err = n.Interface.ListElements(ctx, objectType, name)
		return err
	})
	return out, err
}

// newNFT returns an nftables interface for our table in netns (the
// process's own namespace when empty); it fails when nft is unusable.
func newNFT(netns string) (knftables.Interface, error) {
	var nft knftables.Interface
	err := network.InNetNS(netns, func() (err error) {
		nft, err = knftables.New(knftables.IPv4Family, TableName)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	if netns == "" {
		return nft, nil
	}
	return nsNFT{Interface: nft, netns: netns}, nil
}

// enableBridgeNetfilter makes bridged traffic (a pod answering another
// pod on the same bridge) pass through conntrack, so DNATed replies are
// translated back. It is per namespace on kernels since 5.3; without
// br_netfilter the file is missing and nothing is done.
func enableBridgeNetfilter(netns string) error {
	return network.InNetNS(netns, func() error {
		const path = "/proc/sys/net/bridge/bridge-nf-call-iptables"
		if _, err := os.Stat(path); err != nil {
			return nil
		}
		return os.WriteFile(path, []byte("1"), 0o644)
	})
}

// setRouteLocalnet sets net.ipv4.conf.all.route_localnet in netns: on,
// the kernel routes packets from and to 127.0.0.0/8 like any others, so
// a connection to 127.0.0.1 that a NodePort DNATs to a pod leaves the
// node, and the pod's replies come back in.
func setRouteLocalnet(netns string, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return network.InNetNS(netns, func() error {
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/all/route_localnet", []byte(v), 0o644); err != nil {
			return fmt.Errorf("set route_localnet: %w", err)
		}
		return nil
	})
}
