package load

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// GCCycle is one garbage collection of a Go process, from its GODEBUG=gctrace=1 line.
type GCCycle struct {
	N     int
	Start time.Time     // the process's start plus the line's @ offset
	Wall  time.Duration // the three clock phases (sweep termination, concurrent mark, mark termination)
	Mark  time.Duration // the concurrent mark phase alone
	CPU   time.Duration // every CPU phase summed (assists, background and idle marking included)
	// HeapStart, HeapEnd, Live are the heap at the start and end of marking and the marked live
	// heap; Goal is the heap goal; all in MB, as the runtime prints them.
	HeapStart, HeapEnd, Live, Goal int64
}

// gcLine matches the runtime's gctrace line, e.g.
// "gc 12 @34.567s 3%: 0.021+1234+0.05 ms clock, 0.04+10/600/0+0.1 ms cpu, 3400->3500->1800 MB, 3600 MB goal, …".
var gcLine = regexp.MustCompile(`^gc (\d+) @([0-9.]+)s \d+%: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock, ([0-9.+/]+) ms cpu, (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// ParseGCTrace reads the gctrace lines of a process that started at start from r; other lines
// (the process's log) are skipped.
func ParseGCTrace(r io.Reader, start time.Time) ([]GCCycle, error) {
	var out []GCCycle
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var c GCCycle
		c.N, _ = strconv.Atoi(m[1])
		at, _ := strconv.ParseFloat(m[2], 64)
		c.Start = start.Add(time.Duration(at * float64(time.Second)))
		ms := func(s string) time.Duration {
			f, _ := strconv.ParseFloat(s, 64)
			return time.Duration(f * float64(time.Millisecond))
		}
		c.Wall = ms(m[3]) + ms(m[4]) + ms(m[5])
		c.Mark = ms(m[4])
		for _, f := range strings.FieldsFunc(m[6], func(r rune) bool { return r == '+' || r == '/' }) {
			c.CPU += ms(f)
		}
		c.HeapStart, _ = strconv.ParseInt(m[7], 10, 64)
		c.HeapEnd, _ = strconv.ParseInt(m[8], 10, 64)
		c.Live, _ = strconv.ParseInt(m[9], 10, 64)
		c.Goal, _ = strconv.ParseInt(m[10], 10, 64)
		out = append(out, c)
	}
	return out, sc.Err()
}

// WriteGCTSV writes cycles as a tab-separated table (times in Unix milliseconds), the form
// timeline.tsv has.
func WriteGCTSV(w io.Writer, cycles []GCCycle) error {
	if _, err := fmt.Fprintln(w, "start_unix_ms\tn\twall_ms\tmark_ms\tcpu_ms\theap_start_mb\theap_end_mb\tlive_mb\tgoal_mb"); err != nil {
		return err
	}
	for _, c := range cycles {
		if _, err := fmt.Fprintf(w, "%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\n", c.Start.UnixMilli(), c.N,
			msf(c.Wall), msf(c.Mark), msf(c.CPU), c.HeapStart, c.HeapEnd, c.Live, c.Goal); err != nil {
			return err
		}
	}
	return nil
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ProcStart is when process pid started (Linux: /proc/<pid>/stat's start time, in clock ticks
// since boot, and /proc/stat's boot time).
func ProcStart(pid int) (time.Time, error) {
	f, err := procStatFields(pid, 20)
	if err != nil {
		return time.Time{}, err
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // stat's field 22
	if err != nil {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime: %w", err)
			}
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clockTicks), nil
		}
	}
	return time.Time{}, fmt.Errorf("/proc/stat: no btime")
}
