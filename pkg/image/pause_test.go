package image

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"
)

func TestPauseELFParses(t *testing.T) {
	for _, tc := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		t.Run(tc.arch, func(t *testing.T) {
			bin, err := pauseELF(tc.arch)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("not an ELF file: %v", err)
			}
			if f.Machine != tc.machine || f.Type != elf.ET_EXEC || len(f.Progs) != 1 {
				t.Fatalf("machine %v type %v progs %d", f.Machine, f.Type, len(f.Progs))
			}
			if f.Entry != elfBase+elfHdr || f.Progs[0].Filesz != uint64(len(bin)) {
				t.Fatalf("entry %#x filesz %d, want %#x %d", f.Entry, f.Progs[0].Filesz, elfBase+elfHdr, len(bin))
			}
			if len(bin) > 512 {
				t.Errorf("pause program is %d bytes; it should be tiny", len(bin))
			}
		})
	}
	if _, err := pauseELF("riscv64"); err == nil {
		t.Error("want an error for an architecture without a pause program")
	}
}

// TestPauseRuns runs the generated program on this machine: it must sleep,
// then exit 0 on SIGTERM (and on SIGINT), as a sandbox's PID 1 must.
func TestPauseRuns(t *testing.T) {
	if goruntime.GOOS != "linux" || (goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64") {
		t.Skipf("the pause program is for linux/amd64 and linux/arm64, not %s/%s", goruntime.GOOS, goruntime.GOARCH)
	}
	bin, err := pauseELF(goruntime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("pause exited before a signal: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		_ = cmd.Process.Signal(sig)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("pause on %v: %v, want exit 0", sig, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("pause ignored %v", sig)
		}
	}
}
