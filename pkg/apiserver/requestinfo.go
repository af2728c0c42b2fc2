package apiserver

import (
	"net/http"
	"strings"
)

// requestInfo is what the URL and method say about an API request.
type requestInfo struct {
	// IsResource is false for discovery and other non-resource paths.
	IsResource  bool
	Verb        string // get list watch create update patch delete deletecollection
	Group       string
	Version     string
	Namespace   string
	Resource    string
	Name        string
	Subresource string
	// ProxyPath is what follows .../{name}/proxy: "" for nothing, else a
	// path beginning with "/" (a trailing slash kept).
	ProxyPath string
	Path      string
}

// namespaceSubresources are the subresources of a namespace itself, as
// opposed to the namespaced resources that share the /namespaces/{ns}/ prefix.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo reads /api/v1/... and /apis/{group}/{version}/... paths,
// the same grammar as Kubernetes, including the legacy /watch/ prefix.
func parseRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{Path: r.URL.Path}
	parts := splitPath(r.URL.Path)
	segments := len(parts)
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		info.Version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		info.Group, info.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return info
	}
	if len(parts) == 0 {
		return info
	}
	info.IsResource = true
	watchPrefix := false
	if parts[0] == "watch" {
		watchPrefix, parts = true, parts[1:]
		if len(parts) == 0 {
			info.IsResource = false
			return info
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if len(parts) > 2 && parts[2] == "proxy" {
		info.ProxyPath = proxyPath(r.URL.Path, segments-len(parts)+3)
	} else if len(parts) > 3 {
		info.IsResource = false // other deeper paths are not served
		return info
	}
	if info.Resource == "namespaces" {
		// /api/v1/namespaces/{name}[/status]: the namespace is the object itself.
		info.Name, info.Namespace = info.Namespace, ""
		if len(parts) > 2 {
			info.Subresource = parts[2]
		}
	}

	isWatch := watchPrefix || queryBool(r.URL.Query()["watch"])
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatch:
			info.Verb = "watch"
		case info.Name == "":
			info.Verb = "list"
		default:
			info.Verb = "get"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		if info.Name == "" {
			info.Verb = "deletecollection"
		} else {
			info.Verb = "delete"
		}
	}
	return info
}

// proxyPath is what follows the first n segments of path: "" when
// nothing does, else "/" and the rest as written.
func proxyPath(path string, n int) string {
	rest := strings.TrimLeft(path, "/")
	for range n {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return ""
		}
		rest = rest[i+1:]
	}
	return "/" + rest
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// queryBool reads a boolean query parameter as Kubernetes' parameter
// codec does: absent, "0" and "false" are false, anything else true.
func queryBool(values []string) bool {
	return len(values) > 0 && values[0] != "0" && !strings.EqualFold(values[0], "false")
}
