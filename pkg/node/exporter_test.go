package node

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if inUse, err := addressInUse(addr, ""); err != nil || !inUse {
		t.Errorf("addressInUse(%s) with a listener = %v, %v; want true", addr, inUse, err)
	}
	_ = ln.Close()
	if inUse, err := addressInUse(addr, ""); err != nil || inUse {
		t.Errorf("addressInUse(%s) once closed = %v, %v; want false", addr, inUse, err)
	}
}

func TestNodeExporterPartOff(t *testing.T) {
	cfg := &Config{NodeIP: "127.0.0.1", NodeExporterPort: -1, Logger: slog.Default()}
	if p := nodeExporterPart(cfg); p != nil {
		t.Errorf("NodeExporterPort -1: part %q, want none", p.Name())
	}
}

// The node exporter serves the node's series on its address, without a
// collector failing on the scrape; a second node on the same address
// runs none, and waits quietly instead of restarting it.
func TestNodeExporterServes(t *testing.T) {
	path, err := FindNodeExporter()
	if err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := ln.Addr().String()
	_ = ln.Close()
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runNodeExporter(ctx, path, address, root, "", slog.Default()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node exporter: %v", err)
		}
	}()
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + address + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node exporter at %s not serving after 20s: %v", address, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, series := range []string{"node_cpu_seconds_total", "node_memory_MemAvailable_bytes", "node_network_receive_bytes_total"} {
		if !strings.Contains(body, series) {
			t.Errorf("no %s in the node exporter's /metrics", series)
		}
	}
	if strings.Contains(body, `collector="systemd"`) {
		t.Error("the systemd collector runs")
	}
	logb, _ := os.ReadFile(filepath.Join(root, "node-exporter.log"))
	if strings.Contains(string(logb), "collector failed") {
		t.Errorf("a collector failed:\n%s", logb)
	}

	// A second node on the same address.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	second := t.TempDir()
	if err := runNodeExporter(ctx2, path, address, second, "", slog.Default()); err != nil {
		t.Errorf("second node exporter on %s: %v", address, err)
	}
	if _, err := os.Stat(filepath.Join(second, "node-exporter.log")); err == nil {
		t.Error("a second node exporter was started on a taken address")
	}
}
