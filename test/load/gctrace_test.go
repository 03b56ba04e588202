package load

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseGCTrace(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	in := strings.Join([]string{
		`I1127 12:00:01.000000 1 server.go:100] a log line`,
		`gc 1 @0.012s 2%: 0.018+1.2+0.003 ms clock, 0.036+0.30/1.0/0+0.006 ms cpu, 4->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P`,
		`gc 57 @1234.500s 9%: 0.05+2345.6+0.4 ms clock, 0.1+150/1800/20+0.8 ms cpu, 3400->3550->1790 MB, 3580 MB goal, 1 MB stacks, 0 MB globals, 2 P`,
		`gc 58 @1240.5s 9%: 0.05+12+0.4 ms clock, 0.1+1/2/3+0.8 ms cpu, 3400->3550->1790 MB (forced)`, // no goal: not a full line
	}, "\n")
	got, err := ParseGCTrace(strings.NewReader(in), start)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("parsed %d cycles, want 2: %+v", len(got), got)
	}
	c := got[1]
	if c.N != 57 || !c.Start.Equal(start.Add(1234500*time.Millisecond)) || c.Live != 1790 || c.Goal != 3580 || c.HeapStart != 3400 || c.HeapEnd != 3550 {
		t.Errorf("cycle = %+v", c)
	}
	if want := 2346050 * time.Microsecond; c.Wall != want {
		t.Errorf("wall = %v, want %v", c.Wall, want)
	}
	if want := 2345600 * time.Microsecond; c.Mark != want {
		t.Errorf("mark = %v, want %v", c.Mark, want)
	}
	if want := 1970900 * time.Microsecond; c.CPU != want { // 0.1+150+1800+20+0.8
		t.Errorf("cpu = %v, want %v", c.CPU, want)
	}
	var b strings.Builder
	if err := WriteGCTSV(&b, got); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "1795782034500\t57\t2346.1\t2345.6\t1970.9\t3400\t3550\t1790\t3580") {
		t.Errorf("tsv =\n%s", b.String())
	}
}

func TestProcStart(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	st, err := ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(st); age < 0 || age > time.Hour {
		t.Errorf("this process started %v ago, by ProcStart", age)
	}
}
