package build

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BaseRepository is where base layers are pushed once, to be mounted into
// functions' repositories.
const BaseRepository = "minik8s/base-layers"

// defaultPath is the PATH of an image whose Env names none: the base is a
// bare root filesystem, with no config of its own.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config describes a Builder.
type Config struct {
	// Registry is the registry's host:port, spoken to over plain HTTP
	// (required).
	Registry string
	Logger   *slog.Logger
}

// Image is what Build makes.
type Image struct {
	// Repository and Tag name the image in the registry
	// ("functions/default/greet", "r3").
	Repository string
	Tag        string
	// BaseTarball is an uncompressed tar of the root filesystem; empty:
	// no base, the image holds Files only.
	BaseTarball string
	// Files are put in the image by path ("function/main.py"), mode 0644,
	// their directories 0755, owned by root.
	Files      map[string][]byte
	Entrypoint []string
	// Env is the image's environment, NAME=value; a default PATH is added
	// when it names none.
	Env        []string
	WorkingDir string
	// ExposedPort, when set, is declared as its TCP port.
	ExposedPort int
	Labels      map[string]string
}

// Builder builds and pushes images to one registry. It is safe for
// concurrent use.
type Builder struct {
	cfg       Config
	log       *slog.Logger
	registry  name.Registry
	transport http.RoundTripper

	mu    sync.Mutex
	bases map[baseKey]*baseEntry
	// pushed are the digests this Builder pushed, by repository, so that
	// Delete also finds those no tag names any more.
	pushed map[string]map[string]bool
}

// New checks cfg.
func New(cfg Config) (*Builder, error) {
	if cfg.Registry == "" {
		return nil, errors.New("build: a registry is required")
	}
	reg, err := name.NewRegistry(cfg.Registry, name.Insecure)
	if err != nil {
		return nil, fmt.Errorf("build: registry %q: %w", cfg.Registry, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 8
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &Builder{
		cfg: cfg, log: cfg.Logger.With("component", "build"), registry: reg, transport: t,
		bases: map[baseKey]*baseEntry{}, pushed: map[string]map[string]bool{},
	}, nil
}

// Build builds img, pushes it by digest and under its tag, and returns
// its reference by digest: <registry>/<repository>@sha256:<hex>.
func (b *Builder) Build(ctx context.Context, img Image) (string, error) {
	began := time.Now()
	repo, err := b.repository(img.Repository)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(repo.String()+":"+img.Tag, name.Insecure, name.StrictValidation)
	if err != nil || img.Tag == "" {
		return "", fmt.Errorf("build %s: bad tag %q", img.Repository, img.Tag)
	}
	files, err := filesLayer(img.Files)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", img.Repository, err)
	}
	var layers []mutate.Addendum
	if img.BaseTarball != "" {
		base, err := b.baseLayer(ctx, img.BaseTarball)
		if err != nil {
			return "", fmt.Errorf("build %s: %w", img.Repository, err)
		}
		layers = append(layers, mutate.Addendum{Layer: base, MediaType: types.OCIUncompressedLayer,
			History: v1.History{CreatedBy: "minik8s base " + path.Base(img.BaseTarball)}})
	}
	layers = append(layers, mutate.Addendum{Layer: files, MediaType: types.OCILayer,
		History: v1.History{CreatedBy: "minik8s function files"}})

	image, err := mutate.Append(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), layers...)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", img.Repository, err)
	}
	cf, err := image.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", img.Repository, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = imageConfig(img)
	image, err = mutate.ConfigFile(image, cf)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", img.Repository, err)
	}
	digest, err := image.Digest()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", img.Repository, err)
	}
	if err := remote.Write(tag, image, b.options(ctx)...); err != nil {
		return "", fmt.Errorf("push %s: %w", tag, err)
	}
	b.mu.Lock()
	if b.pushed[repo.RepositoryStr()] == nil {
		b.pushed[repo.RepositoryStr()] = map[string]bool{}
	}
	b.pushed[repo.RepositoryStr()][digest.String()] = true
	b.mu.Unlock()
	ref := repo.Digest(digest.String()).String()
	b.log.Info("built", "image", ref, "tag", img.Tag, "took", time.Since(began).Round(time.Millisecond))
	return ref, nil
}

// Tags lists repository's tags; none when the registry does not know it.
func (b *Builder) Tags(ctx context.Context, repository string) ([]string, error) {
	repo, err := b.repository(repository)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(repo, b.options(ctx)...)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list tags of %s: %w", repo, err)
	}
	return tags, nil
}

// Delete deletes every manifest of repository that a tag names (and
// those this Builder pushed), so that none of its images can be pulled.
// A repository the registry does not know is no error.
func (b *Builder) Delete(ctx context.Context, repository string) error {
	repo, err := b.repository(repository)
	if err != nil {
		return err
	}
	tags, err := b.Tags(ctx, repository)
	if err != nil {
		return err
	}
	digests := map[string]bool{}
	for _, t := range tags {
		desc, err := remote.Head(repo.Tag(t), b.options(ctx)...)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", repo.Tag(t), err)
		}
		digests[desc.Digest.String()] = true
	}
	b.mu.Lock()
	maps.Copy(digests, b.pushed[repo.RepositoryStr()])
	b.mu.Unlock()
	for _, d := range slices.Sorted(maps.Keys(digests)) {
		// The registry deletes the tags that name it with it.
		if err := remote.Delete(repo.Digest(d), b.options(ctx)...); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete %s: %w", repo.Digest(d), err)
		}
	}
	b.mu.Lock()
	delete(b.pushed, repo.RepositoryStr())
	b.mu.Unlock()
	if len(digests) > 0 {
		b.log.Info("deleted", "repository", repo.String(), "manifests", len(digests))
	}
	return nil
}

func (b *Builder) repository(repository string) (name.Repository, error) {
	repo, err := name.NewRepository(b.cfg.Registry+"/"+repository, name.Insecure, name.StrictValidation)
	if err != nil {
		return name.Repository{}, fmt.Errorf("build: repository %q: %w", repository, err)
	}
	return repo, nil
}

func (b *Builder) options(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithTransport(b.transport)}
}

// isNotFound tells a registry's "no such repository, manifest or blob".
func isNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, e := range terr.Errors {
		switch e.Code {
		case transport.NameUnknownErrorCode, transport.ManifestUnknownErrorCode, transport.BlobUnknownErrorCode:
			return true
		}
	}
	return false
}

// imageConfig is the runtime configuration of img.
func imageConfig(img Image) v1.Config {
	env := slices.Clone(img.Env)
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		env = append([]string{defaultPath}, env...)
	}
	c := v1.Config{Entrypoint: slices.Clone(img.Entrypoint), Env: env, WorkingDir: img.WorkingDir, Labels: maps.Clone(img.Labels)}
	if img.ExposedPort > 0 {
		c.ExposedPorts = map[string]struct{}{strconv.Itoa(img.ExposedPort) + "/tcp": {}}
	}
	return c
}

// fileTime is the time of every entry of a files layer.
var fileTime = time.Unix(0, 0).UTC()

// filesLayer is a gzipped layer holding files, reproducible: the same
// files give the same digest.
func filesLayer(files map[string][]byte) (v1.Layer, error) {
	clean := make(map[string][]byte, len(files))
	dirs := map[string]bool{}
	for p, data := range files {
		c := strings.TrimPrefix(p, "/")
		if c == "" || path.Clean(c) != c || c == ".." || strings.HasPrefix(c, "../") {
			return nil, fmt.Errorf("bad file path %q", p)
		}
		if _, dup := clean[c]; dup {
			return nil, fmt.Errorf("file %q given twice", c)
		}
		clean[c] = data
		for d := path.Dir(c); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if _, ok := clean[d]; ok {
			return nil, fmt.Errorf("%q is both a file and a directory", d)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: fileTime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(clean)) {
		data := clean[p]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o644, Size: int64(len(data)), ModTime: fileTime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// baseKey tells one version of a base tarball from another.
type baseKey struct {
	path  string
	size  int64
	mtime time.Time
}

// baseEntry is a base tarball's layer, made once.
type baseEntry struct {
	once   sync.Once
	layer  v1.Layer
	err    error
	pushed bool // into BaseRepository; under Builder.mu
}

// baseLayer is the layer of the base tarball at p, hashed once per
// version of the file and pushed once into BaseRepository, mountable
// from there.
func (b *Builder) baseLayer(ctx context.Context, p string) (v1.Layer, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("base tarball: %w", err)
	}
	key := baseKey{path: p, size: st.Size(), mtime: st.ModTime()}
	b.mu.Lock()
	e := b.bases[key]
	if e == nil {
		e = &baseEntry{}
		b.bases[key] = e
	}
	b.mu.Unlock()
	e.once.Do(func() {
		began := time.Now()
		e.layer, e.err = newFileLayer(p, key)
		if e.err == nil {
			b.log.Info("hashed base layer", "tarball", p, "size", key.size, "took", time.Since(began).Round(time.Millisecond))
		}
	})
	if e.err != nil {
		b.mu.Lock()
		if b.bases[key] == e {
			delete(b.bases, key) // the next build tries again
		}
		b.mu.Unlock()
		return nil, e.err
	}
	baseRepo, err := b.repository(BaseRepository)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	pushed := e.pushed
	b.mu.Unlock()
	if !pushed {
		// WriteLayer uploads only what the registry lacks.
		began := time.Now()
		if err := remote.WriteLayer(baseRepo, e.layer, b.options(ctx)...); err != nil {
			return nil, fmt.Errorf("push base layer %s: %w", p, err)
		}
		b.log.Info("pushed base layer", "tarball", p, "repository", baseRepo.String(), "took", time.Since(began).Round(time.Millisecond))
		b.mu.Lock()
		e.pushed = true
		b.mu.Unlock()
	}
	digest, err := e.layer.Digest()
	if err != nil {
		return nil, err
	}
	return &remote.MountableLayer{Layer: e.layer, Reference: baseRepo.Digest(digest.String())}, nil
}

// fileLayer is an uncompressed layer read from a tar file, whose digest
// (and diff id: they are the same) was computed once.
type fileLayer struct {
	path   string
	key    baseKey
	digest v1.Hash
}

var _ v1.Layer = (*fileLayer)(nil)

// newFileLayer hashes the tar file at p.
func newFileLayer(p string, key baseKey) (*fileLayer, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("base tarball: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("hash base tarball %s: %w", p, err)
	}
	if n != key.size {
		return nil, fmt.Errorf("base tarball %s changed while hashed", p)
	}
	return &fileLayer{path: p, key: key, digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}}, nil
}

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) Size() (int64, error)                { return l.key.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCIUncompressedLayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)  { return l.Uncompressed() }

// Uncompressed opens the tar file, refusing one that changed since it
// was hashed.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (st.Size() != l.key.size || !st.ModTime().Equal(l.key.mtime)) {
		err = fmt.Errorf("base tarball %s changed since it was hashed", l.path)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
