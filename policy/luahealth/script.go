package luahealth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/statusfold/statusfold/policy/health"
)

// Where a script comes from.
const (
	SourceArgoCD    = "argo-cd"   // Argo CD's resource_customizations, in the argo-cd module
	SourceConfigMap = "configmap" // a user's argocd-cm-format ConfigMap
)

// Script is one compiled health script. It is safe for concurrent use: each call runs on a Lua
// state of the script's own pool, with a fresh global environment.
type Script struct {
	Key      string // Argo CD's key: "group/Kind", "Kind" for the core group, or a pattern with *
	Source   string // SourceArgoCD or SourceConfigMap
	OpenLibs bool   // string and math libraries opened
	lim      Limits
	proto    *lua.FunctionProto
	states   sync.Pool // *lua.LState with the libraries opened
}

// compile parses and compiles src once.
func compile(key, source, src string, openLibs bool, lim Limits) (*Script, error) {
	chunk, err := parse.Parse(strings.NewReader(src), key)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(chunk, key)
	if err != nil {
		return nil, err
	}
	return &Script{Key: key, Source: source, OpenLibs: openLibs, lim: lim, proto: proto}, nil
}

// Run runs the script on obj (a whole object: metadata, spec, status) and returns Argo CD's verdict.
// An empty Status means the script gave none. A script error, a time-out or an exhausted instruction
// budget is an error (Argo CD shows such an object as Unknown with the error as message).
func (s *Script) Run(obj map[string]any) (r health.Result, err error) {
	l, _ := s.states.Get().(*lua.LState)
	if l == nil {
		l = newVM(s.OpenLibs, s.lim)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.lim.Timeout)
	defer cancel()
	l.SetContext(&budget{Context: ctx, left: s.lim.MaxInstructions})
	defer func() {
		l.RemoveContext()
		l.SetTop(0)
		if err == nil {
			s.states.Put(l) // a state whose call failed may be mid-way in anything: not reused
		} else {
			l.Close()
		}
	}()
	env := l.NewTable()
	meta := l.NewTable()
	meta.RawSetString("__index", l.G.Global)
	l.SetMetatable(env, meta)
	env.RawSetString("obj", toLua(l, obj))
	fn := l.NewFunctionFromProto(s.proto)
	fn.Env = env
	l.Push(fn)
	if err := l.PCall(0, lua.MultRet, nil); err != nil {
		return health.Result{}, scriptError(err)
	}
	var ret lua.LValue = lua.LNil
	if l.GetTop() > 0 {
		ret = l.Get(-1)
	}
	return toResult(ret)
}

// scriptError drops the Lua stack trace, as Argo CD does for the errors it shows users.
func scriptError(err error) error {
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) {
		apiErr.StackTrace = ""
		return fmt.Errorf("lua: %s", apiErr.Object.String())
	}
	return err
}
