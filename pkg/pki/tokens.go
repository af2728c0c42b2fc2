package pki

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// ensureAdminToken finds the admin's row in the token file, adding one (and
// creating the file) when there is none.
func (b *Bundle) ensureAdminToken() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, err := b.readTokens()
	if err != nil {
		return err
	}
	records, err := parseTokenCSV(data)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", b.TokenFile, err)
	}
	for _, r := range records {
		if len(r) >= 3 && strings.TrimSpace(r[1]) == AdminUser && strings.TrimSpace(r[0]) != "" {
			b.AdminToken = strings.TrimSpace(r[0])
			// Keep the file private even if someone loosened it.
			if err := os.Chmod(b.TokenFile, 0o600); err != nil {
				return fmt.Errorf("pki: %w", err)
			}
			return nil
		}
	}
	tok, err := b.appendToken(data, AdminUser, AdminUser, []string{MastersGroup})
	if err != nil {
		return err
	}
	b.AdminToken = tok
	return nil
}

// AddToken appends a row for user/groups to the static token file, with a
// new random token and UID, and returns the token. Authenticators reading the
// file (authn.NewTokenFile) pick the row up without a restart.
func (b *Bundle) AddToken(user string, groups []string) (string, error) {
	if user == "" {
		return "", errors.New("pki: token needs a user name")
	}
	for _, g := range groups {
		if g == "" || strings.Contains(g, ",") {
			return "", fmt.Errorf("pki: invalid group name %q", g)
		}
	}
	uid, err := newUID()
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	data, err := b.readTokens()
	if err != nil {
		return "", err
	}
	return b.appendToken(data, user, uid, groups)
}

func (b *Bundle) readTokens() ([]byte, error) {
	if b.TokenFile == "" {
		return nil, errors.New("pki: bundle has no token file (use Ensure)")
	}
	data, err := os.ReadFile(b.TokenFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pki: read token file: %w", err)
	}
	return data, nil
}

// appendToken rewrites the token file as data plus one new row, atomically.
func (b *Bundle) appendToken(data []byte, user, uid string, groups []string) (string, error) {
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		buf.WriteByte('\n')
	}
	w := csv.NewWriter(&buf)
	row := []string{tok, user, uid}
	if len(groups) > 0 {
		row = append(row, strings.Join(groups, ","))
	}
	if err := w.Write(row); err != nil {
		return "", err
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return "", err
	}
	if err := writeFileAtomic(b.TokenFile, buf.Bytes()); err != nil {
		return "", err
	}
	return tok, nil
}

// parseTokenCSV reads the records of a Kubernetes static token file.
func parseTokenCSV(data []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var out [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}

// newToken returns 256 random bits, base64url: no commas, quotes or spaces.
func newToken() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("pki: token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

// newUID returns a random (version 4) UUID.
func newUID() (string, error) {
	u := make([]byte, 16)
	if _, err := rand.Read(u); err != nil {
		return "", fmt.Errorf("pki: uid: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:]), nil
}
