package ctl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Handler answers one command; arg is its raw JSON argument (may be
// empty).
type Handler func(arg json.RawMessage) (any, error)

// Serve writes ready as the ready line to fd 3, then reads commands from
// stdin and answers each on fd 3 in order, until the "quit" command
// (answered after its handler, if any, ran) or the end of stdin.
func Serve(ready any, handlers map[string]Handler) error {
	out := os.NewFile(3, "ctl")
	if out == nil {
		return fmt.Errorf("ctl: no control descriptor 3: run this role through the controller")
	}
	defer out.Close()
	return serve(os.Stdin, out, ready, handlers)
}

func serve(in io.Reader, out io.Writer, ready any, handlers map[string]Handler) error {
	enc := json.NewEncoder(out)
	if err := write(enc, "ready", ready, nil); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("ctl: bad command line: %w", err)
		}
		h, ok := handlers[req.Cmd]
		var res any
		var err error
		switch {
		case ok:
			res, err = h(req.Arg)
		case req.Cmd != "quit":
			err = fmt.Errorf("ctl: unknown command %q", req.Cmd)
		}
		if werr := write(enc, req.Cmd, res, err); werr != nil {
			return werr
		}
		if req.Cmd == "quit" {
			return nil
		}
	}
	return sc.Err()
}

func write(enc *json.Encoder, cmd string, res any, err error) error {
	r := response{Cmd: cmd}
	if err != nil {
		r.Err = err.Error()
	} else if res != nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			r.Err = "ctl: encode answer: " + merr.Error()
		} else {
			r.Res = b
		}
	}
	return enc.Encode(r)
}
