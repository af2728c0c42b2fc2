package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Read modes of a place, as the script found them.
const (
	StorageReadsDirect = "direct" // O_DIRECT: from the disk
	StorageReadsCached = "cached" // through the page cache
)

// StorageReport is the outcome of `minik8s bench storage`; its JSON form
// is `--json`'s output.
type StorageReport struct {
	Node string `json:"node"`
	// NodeRoot is the node's root dir; Filesystem the filesystem it is
	// on, the one measured.
	NodeRoot   string `json:"nodeRoot"`
	Filesystem string `json:"filesystem"`
	// Busybox runs the script on the node, and is the pods' image.
	Busybox   string       `json:"busybox"`
	SizeMiB   int          `json:"sizeMiB"`
	Files     int          `json:"files"`
	FileBytes int          `json:"fileBytes"`
	Runs      int          `json:"runs"`
	Rows      []StorageRow `json:"rows"`
	// Skipped are the volume types not measured on this machine, and why
	// (GlusterFS not installed).
	Skipped []StorageSkipped `json:"skipped,omitempty"`
}

// StorageSkipped is a volume type left out of the report.
type StorageSkipped struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// StorageRow is one place measured: the node's disk, or a volume type in
// a pod.
type StorageRow struct {
	// Key says which place, whatever its Name (KeyStorage*).
	Key  string `json:"key"`
	Name string `json:"name"`
	// Path is where the data lived, on the node.
	Path string `json:"path"`
	// Reads is StorageReadsDirect or StorageReadsCached.
	Reads string       `json:"reads"`
	Runs  []StorageRun `json:"runs"`
	// The medians of the runs' figures; MB is 10^6 bytes.
	WriteMBps     float64 `json:"writeMBps"`
	ReadMBps      float64 `json:"readMBps"`
	FileOpsPerSec float64 `json:"fileOpsPerSec"`
	// Each median over the node disk's.
	WriteVsNode   *float64 `json:"writeVsNode,omitempty"`
	ReadVsNode    *float64 `json:"readVsNode,omitempty"`
	FileOpsVsNode *float64 `json:"fileOpsVsNode,omitempty"`
}

// StorageRun is one run of the script: the time of each step, and the
// figures they give.
type StorageRun struct {
	WriteSeconds  float64 `json:"writeSeconds"`
	ReadSeconds   float64 `json:"readSeconds"`
	CreateSeconds float64 `json:"createSeconds"`
	StatSeconds   float64 `json:"statSeconds"`
	RemoveSeconds float64 `json:"removeSeconds"`
	WriteMBps     float64 `json:"writeMBps"`
	ReadMBps      float64 `json:"readMBps"`
	// FileOpsPerSec is three operations a file (create, stat, remove)
	// over the three steps' time.
	FileOpsPerSec float64 `json:"fileOpsPerSec"`
}

// storageOutput is the script's output, parsed.
type storageOutput struct {
	reads string
	runs  []StorageRun
}

// parseStorageOutput reads the script's event lines (see storageScript).
// Any other line is a message; a script that did not finish is an error
// that quotes them.
func parseStorageOutput(out string, sizeMiB, files int) (storageOutput, error) {
	var (
		res      storageOutput
		messages []string
		done     bool
		stamps   map[string]float64 // the current run's events
		next     = "B"
	)
	order := map[string]string{"B": "W", "W": "R", "R": "F", "F": "C", "C": "S", "S": "X", "X": "B"}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		stamp, rest, _ := strings.Cut(line, " ")
		t, err := strconv.ParseFloat(stamp, 64)
		if err != nil {
			messages = append(messages, line)
			continue
		}
		event, arg, _ := strings.Cut(rest, " ")
		switch event {
		case "O":
			if arg != StorageReadsDirect && arg != StorageReadsCached {
				return res, fmt.Errorf("unknown read mode %q", arg)
			}
			res.reads = arg
		case "D":
			if next != "B" {
				return res, fmt.Errorf("done in the middle of run %d", len(res.runs)+1)
			}
			done = true
		case "B", "W", "R", "F", "C", "S", "X":
			if event != next {
				return res, fmt.Errorf("run %d: event %s where %s was due", len(res.runs)+1, event, next)
			}
			if event == "B" {
				if n, err := strconv.Atoi(arg); err != nil || n != len(res.runs)+1 {
					return res, fmt.Errorf("run %q begins after %d runs", arg, len(res.runs))
				}
				stamps = map[string]float64{}
			}
			stamps[event] = t
			next = order[event]
			if event == "X" {
				run, err := storageRunOf(stamps, sizeMiB, files)
				if err != nil {
					return res, fmt.Errorf("run %d: %w", len(res.runs)+1, err)
				}
				res.runs = append(res.runs, run)
			}
		default:
			messages = append(messages, rest)
		}
	}
	if !done {
		msg := "no output"
		if len(messages) > 0 {
			msg = strings.Join(messages, "; ")
		}
		return res, fmt.Errorf("the script did not finish, after %d runs: %s", len(res.runs), msg)
	}
	if res.reads == "" {
		return res, errors.New("the script did not say how it reads")
	}
	return res, nil
}

// storageRunOf turns a run's event times into its figures.
func storageRunOf(at map[string]float64, sizeMiB, files int) (StorageRun, error) {
	r := StorageRun{
		WriteSeconds:  at["W"] - at["B"],
		ReadSeconds:   at["R"] - at["W"],
		CreateSeconds: at["C"] - at["F"],
		StatSeconds:   at["S"] - at["C"],
		RemoveSeconds: at["X"] - at["S"],
	}
	for _, d := range []float64{r.WriteSeconds, r.ReadSeconds, r.CreateSeconds, r.StatSeconds, r.RemoveSeconds} {
		if d <= 0 {
			return r, fmt.Errorf("a step took %gs: the clock went back, or did not move", d)
		}
	}
	mb := float64(sizeMiB) * (1 << 20) / 1e6
	r.WriteMBps = mb / r.WriteSeconds
	r.ReadMBps = mb / r.ReadSeconds
	r.FileOpsPerSec = 3 * float64(files) / (r.CreateSeconds + r.StatSeconds + r.RemoveSeconds)
	return r, nil
}

// newStorageRow summarises a place's runs by their medians.
func newStorageRow(key, name, path string, out storageOutput) StorageRow {
	row := StorageRow{Key: key, Name: name, Path: path, Reads: out.reads, Runs: out.runs}
	pick := func(f func(StorageRun) float64) float64 {
		v := make([]float64, len(out.runs))
		for i, r := range out.runs {
			v[i] = f(r)
		}
		return median(v)
	}
	row.WriteMBps = pick(func(r StorageRun) float64 { return r.WriteMBps })
	row.ReadMBps = pick(func(r StorageRun) float64 { return r.ReadMBps })
	row.FileOpsPerSec = pick(func(r StorageRun) float64 { return r.FileOpsPerSec })
	return row
}

// median is the middle value, or the mean of the two middle ones; 0 for
// none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func (r *StorageReport) computeRatios() {
	i := slices.IndexFunc(r.Rows, func(row StorageRow) bool { return row.Key == KeyStorageNode })
	if i < 0 {
		return
	}
	node := r.Rows[i]
	ratio := func(v, base float64) *float64 {
		if base <= 0 {
			return nil
		}
		return ptrTo(v / base)
	}
	for j := range r.Rows {
		row := &r.Rows[j]
		row.WriteVsNode = ratio(row.WriteMBps, node.WriteMBps)
		row.ReadVsNode = ratio(row.ReadMBps, node.ReadMBps)
		row.FileOpsVsNode = ratio(row.FileOpsPerSec, node.FileOpsPerSec)
	}
}

// WriteJSON writes r as indented JSON.
func (r *StorageReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a header, the table of medians and ratios to the
// node's disk, where each place's data lived, and how to read the figures.
func (r *StorageReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node:      %s\n", r.Node)
	fmt.Fprintf(&b, "disk:      %s (node root dir %s)\n", r.Filesystem, r.NodeRoot)
	fmt.Fprintf(&b, "busybox:   %s, on the node and as the pods' image\n", r.Busybox)
	fmt.Fprintf(&b, "workload:  %d MiB written (dd bs=1M conv=fsync) and read back (dd bs=1M), %d files of %d bytes created, stat'ed and removed; median of %d runs\n\n",
		r.SizeMiB, r.Files, r.FileBytes, r.Runs)

	rows := [][]string{{"PLACE", "WRITE MB/S", "READ MB/S", "FILE OPS/S", "WRITE VS NODE", "READ VS NODE", "FILES VS NODE"}}
	cached := false
	for _, row := range r.Rows {
		read := strconv.FormatFloat(row.ReadMBps, 'f', 1, 64)
		if row.Reads == StorageReadsCached {
			read += "*"
			cached = true
		}
		rows = append(rows, []string{
			row.Name, strconv.FormatFloat(row.WriteMBps, 'f', 1, 64), read, strconv.FormatFloat(row.FileOpsPerSec, 'f', 0, 64),
			formatRatio(row.WriteVsNode), formatRatio(row.ReadVsNode), formatRatio(row.FileOpsVsNode),
		})
	}
	writeAligned(&b, rows)

	b.WriteString("\nwhere the data lived, on the node:\n")
	paths := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		paths = append(paths, []string{"  " + row.Name, row.Path})
	}
	writeLeftAligned(&b, paths)
	if len(r.Skipped) > 0 {
		b.WriteString("\nnot measured:\n")
		skipped := make([][]string, 0, len(r.Skipped))
		for _, sk := range r.Skipped {
			skipped = append(skipped, []string{"  " + sk.Name, sk.Reason})
		}
		writeLeftAligned(&b, skipped)
	}

	b.WriteString("\nMB is 10^6 bytes. Write: dd from /dev/zero, 1 MiB blocks, synced (conv=fsync) before dd ends. ")
	if cached {
		b.WriteString("Read: the file just written, with O_DIRECT (iflag=direct), so from the disk, except where marked *: that filesystem refused O_DIRECT, so the read went through the page cache and may not have touched the disk.\n")
	} else {
		b.WriteString("Read: the file just written, with O_DIRECT (iflag=direct), so from the disk, not the page cache (one 1 MiB request at a time).\n")
	}
	b.WriteString("File ops: 3 a file: create (a shell loop: open, 4 KiB write, close; the loop's own cost, the same everywhere, included), stat (one find over them), remove (one rm -r); nothing synced, so mostly the filesystem's metadata path in memory.\n")
	if i := slices.IndexFunc(r.Rows, func(row StorageRow) bool { return row.Key == KeyStorageGlusterfs }); i >= 0 {
		fmt.Fprintf(&b, "%s: the shared file system; the pod's I/O goes through the node's FUSE client (glusterfs), then TLS over TCP on the loopback to glusterfsd, which stores it in its brick, a directory on the same disk as the node's. O_DIRECT holds at the pod's end only: glusterfsd reads the brick through the page cache, so its read is likely of the file just written, from memory.\n", r.Rows[i].Name)
	}
	b.WriteString("Times: busybox ts stamps each step's end (gettimeofday, microseconds); figures are the median of the runs' (each run's in --json). The write and the small files each start after an untimed sync. Places are measured one after the other, the node's disk first.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLeftAligned pads every column but the last to its widest cell.
func writeLeftAligned(b *strings.Builder, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, row := range rows {
		for i, cell := range row {
			if i == len(row)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(cell + strings.Repeat(" ", widths[i]-len(cell)+2))
		}
		b.WriteString("\n")
	}
}

// describeFilesystem names the filesystem path is on, from the mount
// table: "ext4 /dev/vda mounted on /".
func describeFilesystem(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "unknown filesystem (" + err.Error() + ")"
	}
	return filesystemOf(string(mountinfo), path)
}

// filesystemOf finds, in /proc/self/mountinfo's text, the mount that
// holds path (an absolute path without symlinks): the last one at its
// longest mount point that is path or one of its parents.
func filesystemOf(mountinfo, path string) string {
	best, bestLen := "", -1
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if !pathWithin(path, mp) || len(mp) < bestLen {
			continue
		}
		best, bestLen = fmt.Sprintf("%s %s mounted on %s", g[0], unescapeMountinfo(g[1]), mp), len(mp)
	}
	if best == "" {
		return "unknown filesystem"
	}
	return best
}

// pathWithin says whether path is dir or under it.
func pathWithin(path, dir string) bool {
	if dir == "/" || path == dir {
		return strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// mountinfo's fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
