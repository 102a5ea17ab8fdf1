package ctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestServeAnswersInOrder(t *testing.T) {
	in := strings.NewReader(`{"cmd":"add","arg":{"a":2,"b":3}}
{"cmd":"fail"}
{"cmd":"nope"}
{"cmd":"quit"}
{"cmd":"add","arg":{"a":1,"b":1}}
`)
	var out bytes.Buffer
	handlers := map[string]Handler{
		"add": func(arg json.RawMessage) (any, error) {
			var v struct{ A, B int }
			if err := json.Unmarshal(arg, &v); err != nil {
				return nil, err
			}
			return v.A + v.B, nil
		},
		"fail": func(json.RawMessage) (any, error) { return nil, errors.New("boom") },
	}
	if err := serve(in, &out, map[string]string{"addr": "x"}, handlers); err != nil {
		t.Fatal(err)
	}
	var got []response
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 5 {
		t.Fatalf("%d answers, want 5 (ready, add, fail, nope, quit): %+v", len(got), got)
	}
	if got[0].Cmd != "ready" || string(got[0].Res) != `{"addr":"x"}` {
		t.Errorf("ready line %+v", got[0])
	}
	if string(got[1].Res) != "5" || got[2].Err != "boom" || !strings.Contains(got[3].Err, "unknown command") || got[4].Cmd != "quit" {
		t.Errorf("answers %+v", got[1:])
	}
}
