// Package dashboard owns the web dashboard's HTTP side: the bundle that
// web/dashboard/build.sh writes into dist/ (index.html, app.js, app.css),
// embedded in the binary and served under /dashboard/ by the apiserver
// (docs/design/0027-dashboard.md).
//
// It serves files only. The page talks to the same origin's Kubernetes
// API with the user's own credentials and RBAC, so this package holds no
// client, no cache and no authorization of its own: the apiserver
// authenticates and authorizes /dashboard/ like any non-resource URL. It
// must not grow an API of its own.
package dashboard
