package slurmtest

import (
	"os"
	"testing"
)

// Start starts a cluster in a t.TempDir and stops it when the test ends. It
// skips the test when not root (the daemons run as root, as SlurmUser) and
// fails it when a program is missing: `make deps` installs them, so in CI
// nothing skips.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a Slurm test cluster runs its daemons as root; run the test as root")
	}
	if err := CheckBinaries(); err != nil {
		t.Fatal(err)
	}
	c, err := StartCluster(t.Context(), t.TempDir(), cfg)
	if err != nil {
		t.Fatalf("start slurm cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop slurm cluster %s: %v", c.Name, err)
		}
	})
	t.Logf("slurm cluster %s in %s: slurmctld :%d, slurmd :%d, node %s (%d CPUs, %d MiB, %d GPUs), up in %v",
		c.Name, c.Dir, c.CtldPort, c.SlurmdPort, c.NodeName, c.CPUs, c.MemoryMiB, c.GPUs, c.StartupTime.Round(1e6))
	return c
}
