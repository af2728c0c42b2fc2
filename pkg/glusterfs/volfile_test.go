package glusterfs

import (
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Path
		err  bool
	}{
		{in: "minik8s", want: Path{Volume: "minik8s"}},
		{in: "minik8s/pvc-1", want: Path{Volume: "minik8s", Dir: "pvc-1"}},
		{in: "/minik8s/a/b/", want: Path{Volume: "minik8s", Dir: "a/b"}},
		{in: "", err: true},
		{in: "/", err: true},
		{in: "minik8s/../etc", err: true},
		{in: "minik8s/a//b", err: true},
		{in: "minik8s/./a", err: true},
		{in: "my vol/a", err: true},
	} {
		got, err := ParsePath(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParsePath(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil && tc.in != "/minik8s/a/b/" && got.String() != tc.in {
			t.Errorf("ParsePath(%q).String() = %q", tc.in, got.String())
		}
	}
}

// The volume files carry the TLS settings and who may connect: a file
// without them would serve the data to anyone who reaches the port.
func TestVolfiles(t *testing.T) {
	tls := TLS{CertFile: "/t/c.crt", KeyFile: "/t/c.key", CAFile: "/t/ca.crt"}
	srv := serverVolfile("/data/brick", "0.0.0.0", 24017, tls, []string{"system:node:*", ProvisionerCN})
	for _, want := range []string{
		"type storage/posix\n    option directory /data/brick\n",
		"volume minik8s\n    type debug/io-stats\n",
		"option transport.socket.listen-port 24017\n",
		"option transport.socket.ssl-enabled on\n",
		"option transport.socket.ssl-ca-list /t/ca.crt\n",
		"option auth.login.minik8s.ssl-allow system:node:*," + ProvisionerCN + "\n",
		"subvolumes minik8s\n",
	} {
		if !strings.Contains(srv, want) {
			t.Errorf("server volume file lacks %q:\n%s", want, srv)
		}
	}
	cl := clientVolfile(Server{Host: "10.0.0.1", Port: 24017}, "minik8s", tls)
	for _, want := range []string{
		"type protocol/client\n", "option remote-host 10.0.0.1\n", "option remote-port 24017\n",
		"option remote-subvolume minik8s\n", "option transport.socket.ssl-enabled on\n", "option transport.socket.ssl-own-cert /t/c.crt\n",
	} {
		if !strings.Contains(cl, want) {
			t.Errorf("client volume file lacks %q:\n%s", want, cl)
		}
	}
	if strings.Count(cl, "\n    type ") != 1 {
		t.Errorf("the client stacks translators (caches hide other nodes' writes):\n%s", cl)
	}
}
