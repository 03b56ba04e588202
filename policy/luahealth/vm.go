package luahealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/statusfold/statusfold/policy/health"
)

// Limits bound one call of a script.
type Limits struct {
	Timeout         time.Duration // wall-clock time of one call (default 1s, as Argo CD)
	MaxInstructions int64         // Lua VM instructions of one call (default 1,000,000)
	MaxStringBytes  int           // largest string string.rep, string.format and table.concat may build (default 1 MiB)
}

// DefaultLimits are the bounds of a call unless WithLimits says otherwise.
func DefaultLimits() Limits {
	return Limits{Timeout: time.Second, MaxInstructions: 1_000_000, MaxStringBytes: 1 << 20}
}

// errInstructions is the error of a call that used up its instruction budget.
var errInstructions = errors.New("instruction budget exhausted")

// budget is the context of one call: its deadline, and an instruction budget that the VM draws on
// each time it checks the context (once per instruction).
type budget struct {
	context.Context
	left int64
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (b *budget) Done() <-chan struct{} {
	b.left--
	if b.left < 0 {
		return closedDone
	}
	return b.Context.Done()
}

func (b *budget) Err() error {
	if b.left < 0 {
		return errInstructions
	}
	return b.Context.Err()
}

// newVM returns a Lua state with the libraries Argo CD gives health scripts. openLibs adds the string
// and math libraries (Argo CD opens them for its own scripts and for user scripts with
// `resource.customizations.useOpenLibs.<group>_<kind>: "true"`). Nothing reads files, starts
// processes or writes to stdout.
func newVM(openLibs bool, lim Limits) *lua.LState {
	l := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, RegistrySize: 1024, RegistryMaxSize: 256 * 1024})
	libs := []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.OsLibName, lua.OpenOs}}
	if openLibs {
		libs = append(libs, struct {
			name string
			open lua.LGFunction
		}{lua.StringLibName, lua.OpenString}, struct {
			name string
			open lua.LGFunction
		}{lua.MathLibName, lua.OpenMath})
	}
	for _, lib := range libs {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	g := l.G.Global
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "collectgarbage", "module", "require", "_printregs"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("print", l.NewFunction(func(*lua.LState) int { return 0 }))
	// os: only time and date, as Argo CD's safe os library.
	full, _ := g.RawGetString(lua.OsLibName).(*lua.LTable)
	safe := l.NewTable()
	for _, name := range []string{"time", "date"} {
		safe.RawSetString(name, full.RawGetString(name))
	}
	g.RawSetString(lua.OsLibName, safe)
	g.RawSetString("require", l.NewFunction(func(l *lua.LState) int {
		if l.CheckString(1) != lua.OsLibName {
			l.RaiseError("module %q not found (only \"os\" can be required)", l.CheckString(1))
		}
		l.Push(safe)
		return 1
	}))
	boundStrings(l, openLibs, lim.MaxStringBytes)
	return l
}

// boundStrings wraps the library functions that can build a large string in one call so that they
// fail instead past max bytes.
func boundStrings(l *lua.LState, openLibs bool, max int) {
	tbl, _ := l.G.Global.RawGetString(lua.TabLibName).(*lua.LTable)
	concat := tbl.RawGetString("concat")
	tbl.RawSetString("concat", l.NewFunction(func(l *lua.LState) int {
		t := l.CheckTable(1)
		sep := len(l.OptString(2, ""))
		n := 0
		for i := 1; i <= t.Len(); i++ {
			n += len(lua.LVAsString(t.RawGetInt(i))) + sep
			if n > max {
				l.RaiseError("table.concat: result longer than %d bytes", max)
			}
		}
		return callThrough(l, concat)
	}))
	if !openLibs {
		return
	}
	str, _ := l.G.Global.RawGetString(lua.StringLibName).(*lua.LTable)
	rep, format := str.RawGetString("rep"), str.RawGetString("format")
	str.RawSetString("rep", l.NewFunction(func(l *lua.LState) int {
		if n := l.CheckInt(2); n > 0 && len(l.CheckString(1))*n > max {
			l.RaiseError("string.rep: result longer than %d bytes", max)
		}
		return callThrough(l, rep)
	}))
	str.RawSetString("format", l.NewFunction(func(l *lua.LState) int {
		if longWidth(l.CheckString(1)) {
			l.RaiseError("string.format: invalid format (width or precision too long)")
		}
		return callThrough(l, format)
	}))
}

// longWidth reports a format directive whose width or precision has more than two digits (Lua's
// own limit).
func longWidth(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		digits := 0
		for i++; i < len(f) && strings.IndexByte("-+ #0123456789.", f[i]) >= 0; i++ {
			if f[i] >= '0' && f[i] <= '9' {
				if digits++; digits > 2 {
					return true
				}
			} else if f[i] == '.' {
				digits = 0
			}
		}
	}
	return false
}

// callThrough calls fn with the arguments of the running Go function and returns its results.
func callThrough(l *lua.LState, fn lua.LValue) int {
	n := l.GetTop()
	l.Insert(fn, 1)
	l.Call(n, lua.MultRet)
	return l.GetTop()
}

// toLua converts a JSON value to a Lua value as Argo CD does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch t := v.(type) {
	case bool:
		return lua.LBool(t)
	case float64:
		return lua.LNumber(t)
	case int64:
		return lua.LNumber(t)
	case int:
		return lua.LNumber(t)
	case int32:
		return lua.LNumber(t)
	case string:
		return lua.LString(t)
	case json.Number:
		return lua.LString(t)
	case []any:
		arr := l.CreateTable(len(t), 0)
		for _, x := range t {
			arr.Append(toLua(l, x))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(t))
		for k, x := range t {
			tbl.RawSetH(lua.LString(k), toLua(l, x))
		}
		return tbl
	}
	return lua.LNil
}

// toResult reads a script's return value as Argo CD does: a table with `status` and `message`; nil or
// an empty table is no verdict; a status that is not one of Argo CD's is Unknown.
func toResult(v lua.LValue) (health.Result, error) {
	switch t := v.(type) {
	case *lua.LNilType:
		return health.Result{}, nil
	case *lua.LTable:
		if k, _ := t.Next(lua.LNil); k == lua.LNil {
			return health.Result{}, nil
		}
		status, err := field(t, "status")
		if err != nil {
			return health.Result{}, err
		}
		msg, err := field(t, "message")
		if err != nil {
			return health.Result{}, err
		}
		if !valid(health.Status(status)) {
			return health.Result{Status: health.Unknown, Message: "Lua returned an invalid health status"}, nil
		}
		return health.Result{Status: health.Status(status), Message: msg}, nil
	}
	return health.Result{}, fmt.Errorf("expect table output from Lua script, not %s", v.Type())
}

func field(t *lua.LTable, name string) (string, error) {
	switch v := t.RawGetString(name).(type) {
	case lua.LString:
		return string(v), nil
	case *lua.LNilType:
		return "", nil
	default:
		return "", fmt.Errorf("the %s of the Lua result is a %s, not a string", name, v.Type())
	}
}

func valid(s health.Status) bool {
	switch s {
	case health.Healthy, health.Suspended, health.Progressing, health.Missing, health.Degraded, health.Unknown:
		return true
	}
	return false
}
