package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image is a single-layer image to write as an OCI image layout tarball.
type Image struct {
	// Name is the reference it is tagged with, normalised the way a pull
	// would ("busybox" is stored as docker.io/library/busybox:latest).
	Name string
	// Config is the runtime configuration: entrypoint, cmd, env, workdir,
	// user, stop signal.
	Config ocispec.ImageConfig
	// Files make up the layer; parent directories are added as needed.
	Files []File
}

// File is one entry of an image's layer.
type File struct {
	// Path inside the image, with or without the leading slash.
	Path string
	// Mode holds the permission bits, and fs.ModeDir for a directory or
	// fs.ModeSymlink for a symbolic link.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target.
	Link string
}

// epoch is the modification time of every layer entry: images built from
// the same files have the same digest.
var epoch = time.Unix(0, 0).UTC()

// Write writes img as an OCI image layout tarball (oci-layout, index.json,
// blobs/sha256/...), the format `ctr image import` and containerd's Import
// accept. The layer is an uncompressed tar; the same input gives the same
// bytes.
func Write(w io.Writer, img Image) error {
	named, err := reference.ParseNormalizedNamed(img.Name)
	if err != nil {
		return fmt.Errorf("image name %q: %w", img.Name, err)
	}
	named = reference.TagNameOnly(named)
	name := named.String()
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}

	layer, err := layerTar(img.Files)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	layerDesc := descriptor(ocispec.MediaTypeImageLayer, layer)

	config, err := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: goruntime.GOARCH, OS: "linux"},
		Config:   img.Config,
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return err
	}
	configDesc := descriptor(ocispec.MediaTypeImageConfig, config)

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := descriptor(ocispec.MediaTypeImageManifest, manifest)
	manifestDesc.Platform = &ocispec.Platform{Architecture: goruntime.GOARCH, OS: "linux"}
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name": name, // what containerd's import names it
		ocispec.AnnotationRefName:  tag,  // what other OCI tools name it
	}

	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", index},
		{blobPath(layerDesc), layer},
		{blobPath(configDesc), config},
		{blobPath(manifestDesc), manifest},
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write image %s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("write image %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write image %s: %w", name, err)
	}
	return nil
}

func descriptor(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}

func blobPath(d ocispec.Descriptor) string {
	return path.Join(ocispec.ImageBlobsDir, d.Digest.Algorithm().String(), d.Digest.Encoded())
}

// layerTar returns the layer as a tar, sorted by path, with parent
// directories added and every entry owned by root.
func layerTar(files []File) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if p == "" {
			return nil, fmt.Errorf("layer entry with empty path")
		}
		f.Path = p
		byPath[p] = f
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, p := range paths {
		f := byPath[p]
		hdr := &tar.Header{Name: p, Mode: int64(f.Mode.Perm()), ModTime: epoch, Format: tar.FormatPAX}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		switch {
		case f.Mode&fs.ModeDir != 0:
			hdr.Typeflag, hdr.Name = tar.TypeDir, p+"/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
