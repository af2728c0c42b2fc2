package apiserver

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/minik8s/minik8s/pkg/registry"
)

// outputKind is what the client asked the server to render.
type outputKind int

const (
	outputObject outputKind = iota
	outputTable
	outputMetadata // PartialObjectMetadata(List)
)

// output is the negotiated response form.
type output struct {
	kind outputKind
	info runtime.SerializerInfo
}

// mediaTypeLister is what negotiation needs of a codec factory.
type mediaTypeLister interface {
	SupportedMediaTypes() []runtime.SerializerInfo
}

// codecsFor offers the encodings of res's objects: kinds without a
// protobuf encoding (minik8s.io's) are served as JSON or YAML, so a client
// that accepts protobuf or JSON gets JSON, as for Kubernetes' custom
// resources.
func (s *Server) codecsFor(res *registry.Resource) mediaTypeLister {
	if hasProtobuf(res.New()) {
		return s.codecs
	}
	return withoutProtobuf{s.codecs}
}

// hasProtobuf says whether the protobuf serializer can encode obj.
func hasProtobuf(obj runtime.Object) bool {
	_, ok := obj.(interface{ Marshal() ([]byte, error) })
	return ok
}

type withoutProtobuf struct{ codecs serializer.CodecFactory }

func (c withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	return slices.DeleteFunc(slices.Clone(c.codecs.SupportedMediaTypes()), func(info runtime.SerializerInfo) bool {
		return info.MediaType == runtime.ContentTypeProtobuf
	})
}

// negotiate picks the first acceptable media type from Accept, the way
// Kubernetes does: as=Table and as=PartialObjectMetadata[List] in group
// meta.k8s.io select transformed output; plain types select the encoding.
func negotiate(codecs mediaTypeLister, accept string, allowTransform bool) (output, error) {
	if strings.TrimSpace(accept) == "" {
		accept = "application/json"
	}
	supported := codecs.SupportedMediaTypes()
	for _, clause := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		kind := outputObject
		if as := params["as"]; as != "" {
			if !allowTransform || params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			switch as {
			case "Table":
				kind = outputTable
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				kind = outputMetadata
			default:
				continue
			}
		}
		if mediaType == "*/*" || mediaType == "application/*" {
			mediaType = runtime.ContentTypeJSON
		}
		for _, info := range supported {
			if info.MediaType != mediaType {
				continue
			}
			if kind != outputObject && mediaType == runtime.ContentTypeProtobuf {
				break // tables and metadata are served as JSON or YAML only
			}
			return output{kind: kind, info: info}, nil
		}
	}
	return output{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", fmt.Sprintf("only the following media types are accepted: %s", strings.Join(mediaTypes(codecs), ", ")), 0, false)
}

func mediaTypes(codecs mediaTypeLister) []string {
	var out []string
	for _, info := range codecs.SupportedMediaTypes() {
		out = append(out, info.MediaType)
	}
	return out
}

// encode writes obj in the negotiated media type.
func encode(w http.ResponseWriter, code int, out output, obj runtime.Object) {
	var buf bytes.Buffer
	if err := out.info.Serializer.Encode(obj, &buf); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", out.info.MediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
