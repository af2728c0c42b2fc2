package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
)

// FindGoProgram looks for a program that `make deps` installs with `go
// install`: on PATH, then in $GOPATH/bin, ~/go/bin and /root/go/bin (a
// root service's PATH rarely holds the Go install directory). ok is
// false when it is nowhere.
func FindGoProgram(name string) (path string, ok bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(gp)[0], "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	dirs = append(dirs, "/root/go/bin")
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
