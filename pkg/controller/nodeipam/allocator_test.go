package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestNewAllocator(t *testing.T) {
	tests := []struct {
		cluster string
		mask    int
		count   int
		wantErr string
	}{
		{cluster: "10.244.0.0/16", mask: 24, count: 256},
		{cluster: "10.245.0.0/23", mask: 24, count: 2},
		{cluster: "10.0.0.0/8", mask: 26, count: 1 << 18},
		{cluster: "10.244.0.0/16", mask: 16, count: 1},
		{cluster: "10.244.0.0/16", mask: 8, wantErr: "between"},
		{cluster: "10.244.0.0/16", mask: 31, wantErr: "between"},
		{cluster: "10.244.1.0/16", mask: 24, wantErr: "host bits"},
		{cluster: "fd00::/48", mask: 64, wantErr: "IPv4"},
		{cluster: "0.0.0.0/0", mask: 30, wantErr: "2^24"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_by_%d", tt.cluster, tt.mask), func(t *testing.T) {
			a, err := newAllocator(netip.MustParsePrefix(tt.cluster), tt.mask)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.count != tt.count {
				t.Errorf("count %d, want %d", a.count, tt.count)
			}
		})
	}
}

func TestAllocatorPrefixIndex(t *testing.T) {
	a, err := newAllocator(netip.MustParsePrefix("10.244.0.0/16"), 24)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]string{0: "10.244.0.0/24", 1: "10.244.1.0/24", 255: "10.244.255.0/24"} {
		if got := a.prefix(i).String(); got != want {
			t.Errorf("prefix(%d) = %s, want %s", i, got, want)
		}
		if j, ok := a.index(netip.MustParsePrefix(want)); !ok || j != i {
			t.Errorf("index(%s) = %d, %v", want, j, ok)
		}
	}
	for _, p := range []string{"10.245.0.0/24", "10.244.1.0/25", "10.244.0.0/16"} {
		if _, ok := a.index(netip.MustParsePrefix(p)); ok {
			t.Errorf("index(%s) claims it", p)
		}
	}
	b, _ := newAllocator(netip.MustParsePrefix("10.0.0.0/8"), 26)
	if got := b.prefix(5).String(); got != "10.0.1.64/26" {
		t.Errorf("prefix(5) of /26s = %s", got)
	}
}

func TestAllocatorAllocate(t *testing.T) {
	a, _ := newAllocator(netip.MustParsePrefix("10.245.0.0/22"), 24) // 4 subnets
	a.occupy("existing", 1)
	got := map[string]int{}
	for _, n := range []string{"a", "b", "c"} {
		i, err := a.allocate(n)
		if err != nil {
			t.Fatal(err)
		}
		got[n] = i
	}
	if got["a"] == got["b"] || got["b"] == got["c"] || got["a"] == got["c"] || got["a"] == 1 || got["b"] == 1 || got["c"] == 1 {
		t.Fatalf("allocations %v collide (1 is taken)", got)
	}
	if i, _ := a.allocate("a"); i != got["a"] {
		t.Errorf("a again got %d, want its reservation %d", i, got["a"])
	}
	if _, err := a.allocate("d"); !errors.Is(err, errFull) {
		t.Fatalf("fifth allocation: %v, want errFull", err)
	}
	a.release("b")
	if i, err := a.allocate("d"); err != nil || i != got["b"] {
		t.Errorf("d got %d, %v; want b's freed %d", i, err, got["b"])
	}
	// A CIDR found in the API takes the subnet from a mere reservation.
	a.occupy("e", got["c"])
	if a.holder(got["c"]) != "e" {
		t.Error("occupy did not take the subnet")
	}
	if _, held := a.byNode["c"]; held {
		t.Error("c still thinks it holds the subnet")
	}
	if a.used() != 4 {
		t.Errorf("used %d, want 4", a.used())
	}
}
