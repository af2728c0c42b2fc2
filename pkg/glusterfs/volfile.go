package glusterfs

import (
	"fmt"
	"strings"
)

// VolumeName is the one volume the server serves.
const VolumeName = "minik8s"

// TLS names the PEM files of one end of a connection: its certificate and
// key, and the CA its peer's certificate must chain to.
type TLS struct {
	CertFile, KeyFile, CAFile string
}

// serverVolfile is glusterfsd's volume file: the brick directory under
// POSIX locks and I/O threads, published by protocol/server on address
// and port to TLS peers whose certificate's CN matches one of allow
// (fnmatch patterns).
func serverVolfile(brick, address string, port int, tls TLS, allow []string) string {
	var b strings.Builder
	vol := func(name, typ string, options [][2]string, sub string) {
		fmt.Fprintf(&b, "volume %s\n    type %s\n", name, typ)
		for _, o := range options {
			fmt.Fprintf(&b, "    option %s %s\n", o[0], o[1])
		}
		if sub != "" {
			fmt.Fprintf(&b, "    subvolumes %s\n", sub)
		}
		b.WriteString("end-volume\n\n")
	}
	b.WriteString("# Written by minik8s (pkg/glusterfs); changes here are overwritten.\n\n")
	vol(VolumeName+"-posix", "storage/posix", [][2]string{{"directory", brick}}, "")
	vol(VolumeName+"-locks", "features/locks", nil, VolumeName+"-posix")
	vol(VolumeName+"-io-threads", "performance/io-threads", nil, VolumeName+"-locks")
	// Clients name the brick by this volume's name (remote-subvolume).
	vol(VolumeName, "debug/io-stats", nil, VolumeName+"-io-threads")
	vol(VolumeName+"-server", "protocol/server", [][2]string{
		{"transport-type", "tcp"},
		{"transport.socket.bind-address", address},
		{"transport.socket.listen-port", fmt.Sprint(port)},
		{"transport.socket.ssl-enabled", "on"},
		{"transport.socket.ssl-own-cert", tls.CertFile},
		{"transport.socket.ssl-private-key", tls.KeyFile},
		{"transport.socket.ssl-ca-list", tls.CAFile},
		// Who may connect is the certificate's business (ssl-allow), not
		// the address's.
		{"auth.addr." + VolumeName + ".allow", "*"},
		{"auth.login." + VolumeName + ".ssl-allow", strings.Join(allow, ",")},
	}, VolumeName)
	return b.String()
}

// Server is where a client finds the server: its address and port.
type Server struct {
	Host string
	Port int
}

// clientVolfile is glusterfs's (the FUSE client's) volume file for
// volume on server: protocol/client alone. No client-side caches
// (io-cache, read-ahead, write-behind, md-cache): pods on other nodes see
// a write as soon as it returns.
func clientVolfile(server Server, volume string, tls TLS) string {
	var b strings.Builder
	b.WriteString("# Written by minik8s (pkg/glusterfs); changes here are overwritten.\n\n")
	fmt.Fprintf(&b, "volume %s-client\n    type protocol/client\n", volume)
	for _, o := range [][2]string{
		{"transport-type", "tcp"},
		{"remote-host", server.Host},
		{"remote-port", fmt.Sprint(server.Port)},
		{"remote-subvolume", volume},
		{"transport.socket.ssl-enabled", "on"},
		{"transport.socket.ssl-own-cert", tls.CertFile},
		{"transport.socket.ssl-private-key", tls.KeyFile},
		{"transport.socket.ssl-ca-list", tls.CAFile},
		// A server that went away is noticed within this many seconds,
		// and reconnected to when it is back.
		{"ping-timeout", "10"},
	} {
		fmt.Fprintf(&b, "    option %s %s\n", o[0], o[1])
	}
	b.WriteString("end-volume\n")
	return b.String()
}

// Path is a PV's spec.glusterfs.path taken apart: the volume and the
// directory in it ("" for the volume's root).
type Path struct {
	Volume, Dir string
}

// ParsePath reads "<volume>" or "<volume>/<dir>"; the directory is
// relative, without "." or ".." components.
func ParsePath(p string) (Path, error) {
	vol, dir, _ := strings.Cut(strings.Trim(p, "/"), "/")
	if vol == "" {
		return Path{}, fmt.Errorf("glusterfs path %q names no volume (want <volume>/<directory>)", p)
	}
	if strings.ContainsAny(vol, " \t\n") {
		return Path{}, fmt.Errorf("glusterfs path %q: the volume name has white space", p)
	}
	dir = strings.Trim(dir, "/")
	for part := range strings.SplitSeq(dir, "/") {
		if dir != "" && (part == "" || part == "." || part == "..") {
			return Path{}, fmt.Errorf("glusterfs path %q: the directory must be a plain relative path", p)
		}
	}
	return Path{Volume: vol, Dir: dir}, nil
}

// String is the path as a PV writes it.
func (p Path) String() string {
	if p.Dir == "" {
		return p.Volume
	}
	return p.Volume + "/" + p.Dir
}
