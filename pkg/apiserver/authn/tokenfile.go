package authn

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

var errInvalidToken = errors.New("invalid bearer token")

type tokenEntry struct {
	sum  [sha256.Size]byte
	user *User
}

type tokenState struct {
	info    os.FileInfo
	entries []tokenEntry
}

type tokenFile struct {
	path  string
	mu    sync.Mutex // serialises reloads
	state atomic.Pointer[tokenState]
}

// NewTokenFile authenticates "Authorization: Bearer <token>" against a
// static token file in the format of Kubernetes' --token-auth-file: CSV rows
// token,user,uid[,"group1,group2"]. The file is stat'ed on every request and
// re-read when its modification time, size or inode changes, so rows added
// (pki.Bundle.AddToken) or removed take effect without a restart. If a
// changed file cannot be read or parsed, token authentication fails until it
// can (fail closed). Tokens are compared in constant time.
func NewTokenFile(path string) (Authenticator, error) {
	a := &tokenFile{path: path}
	st, err := loadTokenFile(path)
	if err != nil {
		return nil, err
	}
	a.state.Store(st)
	return a, nil
}

func (a *tokenFile) Authenticate(r *http.Request) (*User, bool, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	st, err := a.current()
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256([]byte(token))
	var found *User
	for i := range st.entries { // no early exit: same work for every token
		if subtle.ConstantTimeCompare(sum[:], st.entries[i].sum[:]) == 1 {
			found = st.entries[i].user
		}
	}
	if found == nil {
		return nil, false, errInvalidToken
	}
	// Like Kubernetes: once authenticated, the token must not travel further
	// (proxies, logs) inside the server.
	r.Header.Del("Authorization")
	u := *found
	u.Groups = withAuthenticated(found.Groups)
	return &u, true, nil
}

// bearerToken extracts the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// current returns the token table, reloading it when the file changed.
func (a *tokenFile) current() (*tokenState, error) {
	st := a.state.Load()
	fi, err := os.Stat(a.path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if sameFile(st.info, fi) {
		return st, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st = a.state.Load(); sameFile(st.info, fi) {
		return st, nil // another request reloaded it meanwhile
	}
	st, err = loadTokenFile(a.path)
	if err != nil {
		return nil, err
	}
	a.state.Store(st)
	return st, nil
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// loadTokenFile reads and parses the file; the FileInfo is taken from the
// open file, so a file replaced while reading is noticed on the next request.
func loadTokenFile(path string) (*tokenState, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	entries, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return &tokenState{info: fi, entries: entries}, nil
}

// parseTokens parses rows token,user,uid[,groups]; rows with an empty token
// are skipped and, for a repeated token, the last row wins (as in
// Kubernetes).
func parseTokens(data []byte) ([]tokenEntry, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	index := map[string]int{}
	var entries []tokenEntry
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: need at least 3 columns (token, user name, user uid), found %d", line, len(rec))
		}
		token := strings.TrimSpace(rec[0])
		if token == "" {
			continue
		}
		u := &User{Name: strings.TrimSpace(rec[1]), UID: strings.TrimSpace(rec[2])}
		if u.Name == "" {
			return nil, fmt.Errorf("line %d: empty user name", line)
		}
		if len(rec) >= 4 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		e := tokenEntry{sum: sha256.Sum256([]byte(token)), user: u}
		if i, dup := index[token]; dup {
			entries[i] = e
			continue
		}
		index[token] = len(entries)
		entries = append(entries, e)
	}
}
