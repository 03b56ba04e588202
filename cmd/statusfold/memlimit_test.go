package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/statusfold/statusfold/aggregator"
)

// checkErrPrefix fails t unless err starts with want ("": no error); it reports whether the
// result should be checked too (no error was wanted).
func checkErrPrefix(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
		t.Fatalf("error %v, want one starting %q", err, want)
	}
	return want == ""
}

func TestCgroupMemoryLimit(t *testing.T) {
	const v2, v1 = "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name     string
		fs       fstest.MapFS
		want     int64
		wantFile string
		wantErr  string
	}{
		{"no cgroup files", fstest.MapFS{}, 0, "", ""},
		{"v2 limit", fstest.MapFS{v2: file("536870912\n")}, 536870912, "/" + v2, ""},
		{"v2 unlimited", fstest.MapFS{v2: file("max\n")}, 0, "/" + v2, ""},
		{"v2 wins over v1", fstest.MapFS{v2: file("1048576\n"), v1: file("2097152\n")}, 1048576, "/" + v2, ""},
		{"v1 limit", fstest.MapFS{v1: file("268435456\n")}, 268435456, "/" + v1, ""},
		{"v1 unlimited", fstest.MapFS{v1: file("9223372036854771712\n")}, 0, "/" + v1, ""},
		{"v2 malformed", fstest.MapFS{v2: file("lots")}, 0, "/" + v2, `/sys/fs/cgroup/memory.max: "lots" is not a byte count or "max"`},
		{"v1 negative", fstest.MapFS{v1: file("-1")}, 0, "/" + v1, `/sys/fs/cgroup/memory/memory.limit_in_bytes: "-1" is not a byte count or "max"`},
		{"v2 is a folder", fstest.MapFS{v2 + "/x": file("")}, 0, "/" + v2, "/sys/fs/cgroup/memory.max: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, f, err := cgroupMemoryLimit(tc.fs)
			if !checkErrPrefix(t, err, tc.wantErr) {
				return
			}
			if got != tc.want || f != tc.wantFile {
				t.Errorf("= %d from %q, want %d from %q", got, f, tc.want, tc.wantFile)
			}
		})
	}
}

func TestChooseMemoryLimit(t *testing.T) {
	limited := fstest.MapFS{"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("1000000000\n")}}
	for _, tc := range []struct {
		name       string
		env        string
		envSet     bool
		flag       string
		fs         fstest.MapFS
		wantSet    bool
		wantLimit  int64
		wantSource string
		wantErr    string
	}{
		{name: "90% of the cgroup limit", fs: limited, wantSet: true, wantLimit: 900000000,
			wantSource: "90% of /sys/fs/cgroup/memory.max (1000000000 bytes)"},
		{name: "no cgroup limit", fs: fstest.MapFS{}, wantSource: "none (no cgroup memory limit)"},
		{name: "GOMEMLIMIT wins", env: "700MiB", envSet: true, flag: "1Gi", fs: limited, wantSource: "GOMEMLIMIT=700MiB (environment)"},
		{name: "empty GOMEMLIMIT is unset", env: "", envSet: true, fs: limited, wantSet: true, wantLimit: 900000000,
			wantSource: "90% of /sys/fs/cgroup/memory.max (1000000000 bytes)"},
		{name: "flag wins over the cgroup", flag: "512Mi", fs: limited, wantSet: true, wantLimit: 512 << 20, wantSource: "--memory-limit"},
		{name: "flag 0 turns it off", flag: "0", fs: limited, wantSource: "none (--memory-limit=0)"},
		{name: "flag not a quantity", flag: "lots", fs: limited, wantErr: `--memory-limit "lots": quantities must match`},
		{name: "flag negative", flag: "-1Gi", fs: limited, wantErr: `--memory-limit "-1Gi": must not be negative`},
		{name: "cgroup unreadable", fs: fstest.MapFS{"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("x")}},
			wantErr: `/sys/fs/cgroup/memory.max: "x" is not a byte count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseMemoryLimit(tc.env, tc.envSet, tc.flag, tc.fs)
			if !checkErrPrefix(t, err, tc.wantErr) {
				return
			}
			want := memoryLimitChoice{limit: tc.wantLimit, set: tc.wantSet, source: tc.wantSource}
			if got != want {
				t.Errorf("= %+v, want %+v", got, want)
			}
		})
	}
}

// An invalid --memory-limit stops `statusfold manager` before anything starts, naming the flag.
func TestManagerRejectsInvalidMemoryLimit(t *testing.T) {
	cmd := newManagerCommand(func(context.Context, aggregator.Config) error {
		t.Error("the manager was run")
		return nil
	})
	cmd.SetArgs([]string{"--wds-kubeconfig", writeKubeconfig(t), "--webhooks=false", "--memory-limit", "1.5.Gi"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `--memory-limit "1.5.Gi"`) {
		t.Errorf("error %v, want one naming --memory-limit", err)
	}
}
