package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// Image is an image to write as an OCI image layout tarball: the layers in
// Base, lowest first, then one layer made of Files.
type Image struct {
	// Name is the reference it is tagged with, normalised the way a pull
	// would ("busybox" is stored as docker.io/library/busybox:latest).
	Name string
	// Config is the runtime configuration: entrypoint, cmd, env, workdir,
	// user, stop signal.
	Config ocispec.ImageConfig
	// Base are paths of uncompressed layer tarballs on this machine (a root
	// file system, say), below the layer of Files. Images that name the same
	// file share the layer: WriteAll writes it once, containerd stores it
	// once.
	Base []string
	// Files make up the top layer; parent directories are added as needed.
	// An image with Base and no Files has no layer of its own.
	Files []File
}

// File is one entry of an image's layer.
type File struct {
	// Path inside the image, with or without the leading slash.
	Path string
	// Mode holds the permission bits, fs.ModeSetuid, fs.ModeSticky, and
	// fs.ModeDir for a directory or fs.ModeSymlink for a symbolic link.
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
	return WriteAll(w, img)
}

// WriteAll writes imgs as one OCI image layout tarball, with one manifest
// per image in its index and each blob once, however many images share it.
func WriteAll(w io.Writer, imgs ...Image) error {
	var (
		manifests []ocispec.Descriptor
		blobs     []blob
		seen      = map[digest.Digest]bool{}
	)
	add := func(b blob) {
		if !seen[b.desc.Digest] {
			seen[b.desc.Digest] = true
			blobs = append(blobs, b)
		}
	}
	for _, img := range imgs {
		desc, imgBlobs, err := imageBlobs(img)
		if err != nil {
			return err
		}
		manifests = append(manifests, desc)
		for _, b := range imgBlobs {
			add(b)
		}
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: manifests,
	})
	if err != nil {
		return err
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	tw := tar.NewWriter(w)
	entries := append([]blob{{name: ocispec.ImageLayoutFile, data: layout}, {name: "index.json", data: index}}, blobs...)
	for _, e := range entries {
		if err := e.write(tw); err != nil {
			return fmt.Errorf("write images: %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write images: %w", err)
	}
	return nil
}

// blob is one entry of the layout: data in memory, or the file at path.
type blob struct {
	name string
	desc ocispec.Descriptor
	data []byte
	path string
}

func (b blob) write(tw *tar.Writer) error {
	size := int64(len(b.data))
	if b.path != "" {
		size = b.desc.Size
	}
	hdr := &tar.Header{Name: b.name, Mode: 0o644, Size: size, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if b.path == "" {
		_, err := tw.Write(b.data)
		return err
	}
	f, err := os.Open(b.path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(tw, f)
	if err == nil && n != size {
		err = fmt.Errorf("%s changed while being written (%d bytes, not %d)", b.path, n, size)
	}
	return err
}

// imageBlobs returns the descriptor of img's manifest, annotated with its
// name, and its blobs: layers, config, manifest.
func imageBlobs(img Image) (ocispec.Descriptor, []blob, error) {
	named, err := reference.ParseNormalizedNamed(img.Name)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("image name %q: %w", img.Name, err)
	}
	named = reference.TagNameOnly(named)
	name := named.String()
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}

	var blobs []blob
	var layers []ocispec.Descriptor
	for _, p := range img.Base {
		desc, err := fileDescriptor(ocispec.MediaTypeImageLayer, p)
		if err != nil {
			return ocispec.Descriptor{}, nil, fmt.Errorf("image %s: base layer: %w", name, err)
		}
		blobs = append(blobs, blob{name: blobPath(desc), desc: desc, path: p})
		layers = append(layers, desc)
	}
	if len(img.Files) > 0 || len(img.Base) == 0 {
		layer, err := layerTar(img.Files)
		if err != nil {
			return ocispec.Descriptor{}, nil, fmt.Errorf("image %s: %w", name, err)
		}
		desc := descriptor(ocispec.MediaTypeImageLayer, layer)
		blobs = append(blobs, blob{name: blobPath(desc), desc: desc, data: layer})
		layers = append(layers, desc)
	}
	diffIDs := make([]digest.Digest, len(layers))
	for i, l := range layers {
		diffIDs[i] = l.Digest // uncompressed: the digest is the diff ID
	}

	config, err := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: goruntime.GOARCH, OS: "linux"},
		Config:   img.Config,
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
	})
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	configDesc := descriptor(ocispec.MediaTypeImageConfig, config)

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    layers,
	})
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	manifestDesc := descriptor(ocispec.MediaTypeImageManifest, manifest)
	blobs = append(blobs, blob{name: blobPath(configDesc), desc: configDesc, data: config},
		blob{name: blobPath(manifestDesc), desc: manifestDesc, data: manifest})
	manifestDesc.Platform = &ocispec.Platform{Architecture: goruntime.GOARCH, OS: "linux"}
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name": name, // what containerd's import names it
		ocispec.AnnotationRefName:  tag,  // what other OCI tools name it
	}
	return manifestDesc, blobs, nil
}

// fileDescriptor is descriptor for the content of the file at p, read once.
func fileDescriptor(mediaType, p string) (ocispec.Descriptor, error) {
	f, err := os.Open(p)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	d := digest.SHA256.Digester()
	n, err := io.Copy(d.Hash(), f)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("read %s: %w", p, err)
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: d.Digest(), Size: n}, nil
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
		if f.Mode&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
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
