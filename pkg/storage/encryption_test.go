package storage

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestAESGCMRoundTripAndBinding(t *testing.T) {
	key, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "k"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAESGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"data":{"password":"hunter2"}}`)
	enc, err := a.Encrypt("/registry/secrets/default/s", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte("hunter2")) || !bytes.HasPrefix(enc, []byte(aesGCMPrefix)) {
		t.Fatalf("ciphertext leaks plaintext or lacks prefix: %q", enc)
	}
	plain, err := a.Decrypt("/registry/secrets/default/s", enc)
	if err != nil || !bytes.Equal(plain, secret) {
		t.Fatalf("decrypt: %q %v", plain, err)
	}
	if _, err := a.Decrypt("/registry/secrets/default/other", enc); err == nil {
		t.Fatal("ciphertext moved to another key decrypted; want an error")
	}
	if got, _ := a.Decrypt("k", []byte("{}")); string(got) != "{}" {
		t.Fatalf("plaintext written before encryption = %q, want it unchanged", got)
	}
}

func TestLoadOrCreateKeyIsStable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	a, _ := LoadOrCreateKey(p)
	b, _ := LoadOrCreateKey(p)
	if len(a) != 32 || !bytes.Equal(a, b) {
		t.Fatalf("key changed between loads")
	}
}
