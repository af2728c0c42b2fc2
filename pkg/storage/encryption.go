package storage

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// aesGCMPrefix marks an encrypted value, in the same shape Kubernetes uses
// for its encryption-at-rest providers, so a reader of etcd can tell what it sees.
const aesGCMPrefix = "k8s:enc:aesgcm:v1:key1:"

// AESGCM encrypts values with AES-256-GCM. The etcd key is bound in as
// additional data, so a ciphertext copied to another key fails to decrypt.
type AESGCM struct{ aead cipher.AEAD }

// NewAESGCM builds the transformer from a 32-byte key.
func NewAESGCM(key []byte) (*AESGCM, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("aes-gcm key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &AESGCM{aead: aead}, nil
}

// LoadOrCreateKey reads a 32-byte key from path, creating it on first use.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) != 32 {
			return nil, fmt.Errorf("encryption key %s: want 32 bytes, found %d", path, len(key))
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read encryption key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("write encryption key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write encryption key: %w", err)
	}
	return key, nil
}

func (a *AESGCM) Encrypt(key string, plain []byte) ([]byte, error) {
	nonce := make([]byte, a.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(aesGCMPrefix)+len(nonce)+len(plain)+a.aead.Overhead())
	out = append(out, aesGCMPrefix...)
	out = append(out, nonce...)
	return a.aead.Seal(out, nonce, plain, []byte(key)), nil
}

func (a *AESGCM) Decrypt(key string, data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(aesGCMPrefix)) {
		// Written before encryption was turned on: still readable, and
		// encrypted on its next write.
		return data, nil
	}
	data = data[len(aesGCMPrefix):]
	n := a.aead.NonceSize()
	if len(data) < n {
		return nil, errors.New("encrypted value is truncated")
	}
	plain, err := a.aead.Open(nil, data[:n], data[n:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("decrypt %s: %w", key, err)
	}
	return plain, nil
}

// Encrypted wraps a Store so values under the given key prefixes are
// encrypted on the way in and decrypted on the way out.
func Encrypted(inner Store, t *AESGCM, prefixes ...string) Store {
	return &encryptedStore{Store: inner, t: t, prefixes: prefixes}
}

type encryptedStore struct {
	Store
	t        *AESGCM
	prefixes []string
}

func (s *encryptedStore) covers(key string) bool {
	for _, p := range s.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func (s *encryptedStore) in(key string, v []byte) ([]byte, error) {
	if !s.covers(key) {
		return v, nil
	}
	return s.t.Encrypt(key, v)
}

func (s *encryptedStore) out(key string, v []byte) ([]byte, error) {
	if v == nil || !s.covers(key) {
		return v, nil
	}
	return s.t.Decrypt(key, v)
}

func (s *encryptedStore) Get(ctx context.Context, key string) (*KV, error) {
	kv, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if kv.Value, err = s.out(key, kv.Value); err != nil {
		return nil, err
	}
	return kv, nil
}

func (s *encryptedStore) List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error) {
	res, err := s.Store.List(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	for i := range res.KVs {
		if res.KVs[i].Value, err = s.out(res.KVs[i].Key, res.KVs[i].Value); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (s *encryptedStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	v, err := s.in(key, value)
	if err != nil {
		return 0, err
	}
	return s.Store.Create(ctx, key, v)
}

func (s *encryptedStore) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	v, err := s.in(key, value)
	if err != nil {
		return 0, err
	}
	return s.Store.Update(ctx, key, v, expected)
}

func (s *encryptedStore) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan WatchResult {
	in := s.Store.Watch(ctx, prefix, fromRevision)
	out := make(chan WatchResult, cap(in))
	go func() {
		defer close(out)
		for r := range in {
			if r.Event != nil {
				var err error
				ev := *r.Event
				if ev.Value, err = s.out(ev.Key, ev.Value); err == nil {
					ev.PrevValue, err = s.out(ev.Key, ev.PrevValue)
				}
				if err != nil {
					r = WatchResult{Err: err}
				} else {
					r.Event = &ev
				}
			}
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
			if r.Err != nil {
				return
			}
		}
	}()
	return out
}
