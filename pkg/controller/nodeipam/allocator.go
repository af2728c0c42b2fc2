package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// errFull: every subnet of the cluster CIDR is taken.
var errFull = errors.New("no free pod CIDR left in the cluster CIDR")

// allocator hands out the subnets of a cluster CIDR, one per node name.
type allocator struct {
	cluster  netip.Prefix
	maskSize int
	count    int // subnets in cluster

	mu     sync.Mutex
	owner  map[int]string // subnet index -> node
	byNode map[string]int // node -> subnet index
	next   int            // where the next search starts, so freed subnets rest a while
}

func newAllocator(cluster netip.Prefix, maskSize int) (*allocator, error) {
	if !cluster.Addr().Is4() {
		return nil, fmt.Errorf("cluster CIDR %s: only IPv4 is supported", cluster)
	}
	if cluster != cluster.Masked() {
		return nil, fmt.Errorf("cluster CIDR %s has host bits set", cluster)
	}
	if maskSize < cluster.Bits() || maskSize > 30 {
		return nil, fmt.Errorf("node mask size /%d: want between /%d (the cluster CIDR) and /30", maskSize, cluster.Bits())
	}
	if maskSize-cluster.Bits() > 24 {
		return nil, fmt.Errorf("node mask size /%d: more than 2^24 subnets of %s", maskSize, cluster)
	}
	return &allocator{
		cluster: cluster, maskSize: maskSize, count: 1 << (maskSize - cluster.Bits()),
		owner: map[int]string{}, byNode: map[string]int{},
	}, nil
}

// prefix is subnet i.
func (a *allocator) prefix(i int) netip.Prefix {
	b := a.cluster.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i) << (32 - a.maskSize)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), a.maskSize)
}

// index is p's subnet number, if p is exactly one of ours.
func (a *allocator) index(p netip.Prefix) (int, bool) {
	if !p.Addr().Is4() || p.Bits() != a.maskSize || p != p.Masked() || !a.cluster.Contains(p.Addr()) {
		return 0, false
	}
	b, c := p.Addr().As4(), a.cluster.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	base := uint32(c[0])<<24 | uint32(c[1])<<16 | uint32(c[2])<<8 | uint32(c[3])
	return int((v - base) >> (32 - a.maskSize)), true
}

// holder is who holds subnet i ("" when free).
func (a *allocator) holder(i int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.owner[i]
}

// occupy records that node holds subnet i, dropping anything else it held
// and taking i from whoever held it before.
func (a *allocator) occupy(node string, i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.byNode[node]; ok && old != i {
		delete(a.owner, old)
	}
	if prev, ok := a.owner[i]; ok && prev != node {
		delete(a.byNode, prev)
	}
	a.owner[i], a.byNode[node] = node, i
}

// allocate reserves a subnet for node: the one it already holds, else the
// next free one.
func (a *allocator) allocate(node string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, ok := a.byNode[node]; ok {
		return i, nil
	}
	for n := range a.count {
		i := (a.next + n) % a.count
		if _, taken := a.owner[i]; !taken {
			a.owner[i], a.byNode[node] = node, i
			a.next = (i + 1) % a.count
			return i, nil
		}
	}
	return 0, errFull
}

// release frees whatever node holds.
func (a *allocator) release(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, ok := a.byNode[node]; ok {
		delete(a.owner, i)
		delete(a.byNode, node)
	}
}

// used is how many subnets are held.
func (a *allocator) used() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.owner)
}
