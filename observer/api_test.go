package observer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublicTypesOnly: every type reachable from the observer's exported
// API (the snapshot and its panels, the options, the extension point) is
// a builtin or comes from a public package: a user can name each of them.
func TestPublicTypesOnly(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		require.NotContains(t, ty.PkgPath(), "/internal", "%s is %s, from an internal package", path, ty)
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(path+"[]", ty.Elem())
		case reflect.Map:
			walk(path+"[key]", ty.Key())
			walk(path+"[]", ty.Elem())
		case reflect.Func:
			for i := range ty.NumIn() {
				walk(path+"(in)", ty.In(i))
			}
			for i := range ty.NumOut() {
				walk(path+"(out)", ty.Out(i))
			}
		case reflect.Struct:
			if strings.HasPrefix(ty.PkgPath(), "github.com/mailroom-go/mailroom/observer") {
				for i := range ty.NumField() {
					if f := ty.Field(i); f.IsExported() {
						walk(path+"."+f.Name, f.Type)
					}
				}
			}
		}
	}
	for _, v := range []any{Snapshot{}, Options{}, Panel{}, Handler, Serve} {
		walk(reflect.TypeOf(v).String(), reflect.TypeOf(v))
	}
	require.True(t, seen[reflect.TypeOf(MailboxActor{})], "the walk reached the mailbox sample")
}
