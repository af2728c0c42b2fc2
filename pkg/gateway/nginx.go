package gateway

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// statusHost is the server that tells which configuration nginx serves:
// GET /config with this Host, from loopback, answers the configuration's
// id. No DNSRecord or Ingress may claim it.
const statusHost = "minik8s-gateway.invalid"

// nginxConfig renders nginx.conf for r: one server per host, a default
// server (rules without a host, default backends, else 404), access
// limited to allow when set, and the status server answering id.
func nginxConfig(dir string, port int, allow []string, id string, r routes) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Written by the minik8s gateway (pkg/gateway); changes here are overwritten.")
	p("worker_processes 1;")
	p("user nobody nogroup;")
	p("pid %s;", filepath.Join(dir, "nginx.pid"))
	p("error_log %s warn;", filepath.Join(dir, "error.log"))
	p("events { worker_connections 1024; }")
	p("http {")
	p("    access_log %s;", filepath.Join(dir, "access.log"))
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		p("    %s_temp_path %s;", t, filepath.Join(dir, "tmp", t))
	}
	p("    default_type text/plain;")
	// Redirects name no host and port: nginx's port is not the one
	// clients use (pods come through the gateway Service's port 80).
	p("    absolute_redirect off;")
	p("    server_names_hash_bucket_size 128;")
	p("    proxy_http_version 1.1;")
	p("    proxy_connect_timeout 5s;")
	// Function calls carry JSON bodies beyond nginx's 1m default (the
	// router refuses what is over its own limit).
	p("    client_max_body_size 8m;")
	p("    proxy_set_header Host $host;")
	p("    proxy_set_header X-Real-IP $remote_addr;")
	p("    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;")
	p("    proxy_set_header X-Forwarded-Host $host;")
	p("    proxy_set_header X-Forwarded-Proto $scheme;")
	for _, n := range allow {
		p("    allow %s;", n)
	}
	if len(allow) > 0 {
		p("    deny all;")
	}
	hosts := make([]string, 0, len(r.hosts)+1)
	for h := range r.hosts {
		hosts = append(hosts, h)
	}
	if _, ok := r.hosts[defaultHost]; !ok {
		hosts = append(hosts, defaultHost)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		p("    server {")
		if h == defaultHost {
			p("        listen %d default_server;", port)
			p("        server_name _;")
		} else {
			p("        listen %d;", port)
			p("        server_name %s;", h)
		}
		locs := slices.Clone(r.hosts[h])
		slices.SortFunc(locs, func(a, b location) int { return strings.Compare(a.key(), b.key()) })
		root := false
		for _, l := range locs {
			root = root || (!l.exact && l.path == "/")
			p("        # %s", l.owner)
			p("        location %s {", l.key())
			switch {
			case l.upstream == "":
				p("            return 503 \"no backend for %s\\n\";", l.path)
			case l.strip:
				p("            proxy_pass http://%s/;", l.upstream)
				// The backend's redirects stay below the path it is served at.
				if prefix := strings.TrimSuffix(l.path, "/") + "/"; prefix != "/" {
					p("            proxy_redirect http://%s/ %s;", l.upstream, prefix)
					p("            proxy_redirect http://$host/ %s;", prefix)
					p("            proxy_redirect / %s;", prefix)
				}
			default:
				p("            proxy_pass http://%s;", l.upstream)
			}
			if l.readTimeout > 0 {
				p("            proxy_read_timeout %ds;", int(l.readTimeout.Seconds()))
				p("            proxy_send_timeout %ds;", int(l.readTimeout.Seconds()))
			}
			p("        }")
		}
		if !root {
			p("        location / {")
			p("            return 404 \"no route for $host$uri\\n\";")
			p("        }")
		}
		p("    }")
	}
	p("    server {")
	p("        listen %d;", port)
	p("        server_name %s;", statusHost)
	p("        location = /config {")
	p("            allow 127.0.0.0/8;")
	p("            deny all;")
	p("            return 200 \"%s\\n\";", id)
	p("        }")
	p("        location / {")
	p("            return 404;")
	p("        }")
	p("    }")
	p("}")
	return b.String()
}

// hostsFile maps every name to the gateway's address, for CoreDNS.
func hostsFile(addr string, names []string) string {
	var b strings.Builder
	b.WriteString("# Written by the minik8s gateway: DNSRecord and Ingress hosts.\n")
	if addr == "" {
		return b.String()
	}
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", addr, n)
	}
	return b.String()
}
