package v1alpha1_test

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
)

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// lostOrChanged returns the path of the first value of want that got lacks or holds differently;
// keys only in got must hold zero values (a Go struct's empty status, say). "" means none.
func lostOrChanged(path string, want, got any) string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		for k, wv := range wm {
			if d := lostOrChanged(path+"."+k, wv, gm[k]); d != "" {
				return d
			}
		}
		for k, gv := range gm {
			if _, ok := wm[k]; !ok && !isZero(gv) {
				return fmt.Sprintf("%s.%s (added %v)", path, k, gv)
			}
		}
		return ""
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		for i := range wl {
			if d := lostOrChanged(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if fmt.Sprint(want) != fmt.Sprint(got) || reflect.TypeOf(want) != reflect.TypeOf(got) && !(isNumber(want) && isNumber(got)) {
		return path
	}
	return ""
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, int64, int:
		return true
	}
	return false
}

func isZero(v any) bool {
	if v == nil {
		return true
	}
	if m, ok := v.(map[string]any); ok {
		for _, x := range m {
			if !isZero(x) {
				return false
			}
		}
		return true
	}
	return reflect.ValueOf(v).IsZero()
}
