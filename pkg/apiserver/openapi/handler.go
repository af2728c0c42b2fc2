package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Media types of the OpenAPI endpoints. The "@" spellings are the ones
// clients send; responses use the "." spellings, as upstream does.
const (
	mimeV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mimeV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV3Protobuf           = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mimeV3ProtobufDeprecated = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// Served paths.
const (
	PathV2 = "/openapi/v2"
	PathV3 = "/openapi/v3"
)

// lazyBytes is a representation computed on first use.
type lazyBytes struct {
	once sync.Once
	fn   func() ([]byte, error)
	data []byte
	err  error
}

func (l *lazyBytes) get() ([]byte, error) {
	l.once.Do(func() { l.data, l.err = l.fn() })
	return l.data, l.err
}

// document is one served document with its representations.
type document struct {
	json  []byte
	etag  string
	proto *lazyBytes
}

type handler struct {
	lastModified  time.Time
	v2            *document
	discovery     []byte
	discoveryETag string
	groups        map[string]*document // keyed by "api/v1", "apis/apps/v1"
}

// NewHandler builds the OpenAPI documents for resources once and returns a
// handler serving GET (and HEAD) requests for:
//
//	/openapi/v2                         Swagger 2.0, JSON or protobuf
//	/openapi/v3                         v3 discovery document
//	/openapi/v3/api/<version>           v3 document of the core group
//	/openapi/v3/apis/<group>/<version>  v3 document of a named group
//
// The handler expects the full request path; mount it at both /openapi/v2
// and /openapi/v3 plus the /openapi/v3/ prefix (or simply /openapi/).
//
// extensions are documents built elsewhere (a custom resource's), merged
// in: their paths, and their definitions the resources' do not have.
func NewHandler(resources []Resource, extensions ...Extension) (http.Handler, error) {
	v2, err := BuildV2(resources)
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI v2: %w", err)
	}
	v3, err := BuildV3(resources)
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI v3: %w", err)
	}
	for _, ext := range extensions {
		mergeV2(v2, ext.V2)
		key := gvDocPath(ext.GroupVersion)
		if v3[key] == nil {
			v3[key] = &spec3.OpenAPI{
				Version:    "3.0.0",
				Info:       &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
				Paths:      &spec3.Paths{Paths: map[string]*spec3.Path{}},
				Components: &spec3.Components{Schemas: map[string]*spec.Schema{}},
			}
		}
		mergeV3(v3[key], ext.V3)
	}

	h := &handler{lastModified: time.Now().UTC().Truncate(time.Second), groups: map[string]*document{}}

	v2JSON, err := json.Marshal(v2)
	if err != nil {
		return nil, fmt.Errorf("encoding OpenAPI v2: %w", err)
	}
	// kubectl's client side validation depends on the protobuf form, so a
	// document that cannot be converted is an error now, not on first use.
	v2Proto, err := v2ToProto(v2JSON)
	if err != nil {
		return nil, fmt.Errorf("encoding OpenAPI v2 as protobuf: %w", err)
	}
	h.v2 = &document{json: v2JSON, etag: computeETag(v2JSON), proto: &lazyBytes{fn: func() ([]byte, error) { return v2Proto, nil }}}

	type discoveryEntry struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	}
	disc := struct {
		Paths map[string]discoveryEntry `json:"paths"`
	}{Paths: map[string]discoveryEntry{}}
	for key, doc := range v3 {
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encoding OpenAPI v3 for %s: %w", key, err)
		}
		d := &document{json: data, etag: computeETag(data)}
		d.proto = &lazyBytes{fn: func() ([]byte, error) { return v3ToProto(data) }}
		h.groups[key] = d
		disc.Paths[key] = discoveryEntry{ServerRelativeURL: serverRelativeURL(key, d.etag)}
	}
	h.discovery, err = json.Marshal(disc)
	if err != nil {
		return nil, err
	}
	h.discoveryETag = computeETag(h.discovery)
	return h, nil
}

// Extension is the OpenAPI of resources served without Go types: its
// paths and definitions in both versions, and its group version.
type Extension struct {
	GroupVersion schema.GroupVersion
	V2           *spec.Swagger
	V3           *spec3.OpenAPI
}

func mergeV2(into, from *spec.Swagger) {
	if from == nil {
		return
	}
	if from.Paths != nil {
		if into.Paths == nil {
			into.Paths = &spec.Paths{Paths: map[string]spec.PathItem{}}
		}
		for path, item := range from.Paths.Paths {
			into.Paths.Paths[path] = item
		}
	}
	if into.Definitions == nil {
		into.Definitions = spec.Definitions{}
	}
	for name, def := range from.Definitions {
		if _, ok := into.Definitions[name]; !ok {
			into.Definitions[name] = def
		}
	}
}

func mergeV3(into, from *spec3.OpenAPI) {
	if from == nil {
		return
	}
	if from.Paths != nil {
		for path, item := range from.Paths.Paths {
			into.Paths.Paths[path] = item
		}
	}
	if from.Components != nil {
		for name, def := range from.Components.Schemas {
			if _, ok := into.Components.Schemas[name]; !ok {
				into.Components.Schemas[name] = def
			}
		}
	}
}

func v2ToProto(data []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(data)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

func v3ToProto(data []byte) ([]byte, error) {
	doc, err := openapi_v3.ParseDocument(data)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

func computeETag(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

func serverRelativeURL(key, etag string) string {
	u := url.URL{Path: PathV3 + "/" + key}
	u.RawQuery = url.Values{"hash": []string{etag}}.Encode()
	return u.String()
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	switch {
	case p == PathV2:
		h.serveV2(w, r)
	case p == PathV3 || p == PathV3+"/":
		h.serveDiscovery(w, r)
	case strings.HasPrefix(p, PathV3+"/"):
		h.serveGroup(w, r, strings.Trim(strings.TrimPrefix(p, PathV3+"/"), "/"))
	default:
		http.NotFound(w, r)
	}
}

type offer struct {
	mediaType   string // as matched against Accept
	contentType string // as returned
	proto       bool
}

var (
	v2Offers = []offer{
		{mediaType: mimeJSON, contentType: mimeJSON},
		{mediaType: mimeV2ProtobufDeprecated, contentType: mimeV2Protobuf, proto: true},
		{mediaType: mimeV2Protobuf, contentType: mimeV2Protobuf, proto: true},
	}
	v3Offers = []offer{
		{mediaType: mimeJSON, contentType: mimeJSON},
		{mediaType: mimeV3Protobuf, contentType: mimeV3Protobuf, proto: true},
		{mediaType: mimeV3ProtobufDeprecated, contentType: mimeV3Protobuf, proto: true},
	}
)

func (h *handler) serveV2(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	o, ok := negotiate(r.Header.Get("Accept"), v2Offers)
	if !ok {
		http.Error(w, "none of the accepted media types is served", http.StatusNotAcceptable)
		return
	}
	h.serveDocument(w, r, h.v2, o)
}

func (h *handler) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", mimeJSON)
	w.Header().Set("Etag", strconv.Quote(h.discoveryETag))
	w.Header().Set("Cache-Control", "no-cache, private")
	http.ServeContent(w, r, "", h.lastModified, bytes.NewReader(h.discovery))
}

func (h *handler) serveGroup(w http.ResponseWriter, r *http.Request, key string) {
	doc, ok := h.groups[key]
	if !ok {
		http.Error(w, fmt.Sprintf("no OpenAPI v3 document for %q", key), http.StatusNotFound)
		return
	}
	w.Header().Add("Vary", "Accept")
	o, ok := negotiate(r.Header.Get("Accept"), v3Offers)
	if !ok {
		http.Error(w, "none of the accepted media types is served", http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != doc.etag {
			// An outdated link: send the client to the current one.
			http.Redirect(w, r, serverRelativeURL(key, doc.etag), http.StatusMovedPermanently)
			return
		}
		// The content behind a hashed URL never changes.
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	h.serveDocument(w, r, doc, o)
}

func (h *handler) serveDocument(w http.ResponseWriter, r *http.Request, doc *document, o offer) {
	data := doc.json
	if o.proto {
		var err error
		data, err = doc.proto.get()
		if err != nil {
			http.Error(w, "encoding OpenAPI document as protobuf: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	w.Header().Set("Content-Type", o.contentType)
	// The same ETag for both encodings is fine thanks to "Vary: Accept".
	w.Header().Set("Etag", strconv.Quote(doc.etag))
	http.ServeContent(w, r, "", h.lastModified, bytes.NewReader(data))
}

type acceptClause struct {
	typ, subtype string
	q            float64
}

// parseAccept parses an Accept header into clauses sorted by preference
// (quality first, then order of appearance); clauses with q=0 are dropped.
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		if mt == "" {
			continue
		}
		typ, sub, found := strings.Cut(mt, "/")
		if !found {
			if typ != "*" {
				continue
			}
			sub = "*"
		}
		c := acceptClause{typ: typ, subtype: sub, q: 1}
		for _, prm := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(prm), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					c.q = q
				}
			}
		}
		if c.q <= 0 {
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

// negotiate picks the first offer matching the most preferred clause. An
// empty Accept header accepts anything.
func negotiate(header string, offers []offer) (offer, bool) {
	if strings.TrimSpace(header) == "" {
		header = "*/*"
	}
	for _, c := range parseAccept(header) {
		for _, o := range offers {
			typ, sub, _ := strings.Cut(o.mediaType, "/")
			if (c.typ == "*" || c.typ == typ) && (c.subtype == "*" || c.subtype == sub) {
				return o, true
			}
		}
	}
	return offer{}, false
}
