package testnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

// Install registers the test catalog on sys: the testpb types, functions
// and named actors every test node offers.
//
// Functions:
//   - echo(Echo) -> Echo{Text: "echo "+text, N: n+1, From: node}
//   - sleep(Sleep) -> Echo{Text: tag}: sleeps Millis, honours ctx
//   - reject(Echo) -> rejection with code "rejected" and the text
//   - panic(Echo) -> panics
//   - count(Echo): increments a counter by N (or 1); count_get -> Echo{N: total}
//   - big(Echo) -> Blob of N bytes; numbers(Echo) -> Numbers of N values
//   - pid_of(Echo{Text: name}) -> Echo{Text: the PID registered as name}
//   - call_node(Echo{Text: "<node> <fn>", N: times}) -> Echo{N: successes,
//     Text: the last error}: calls fn on node N times (from one caller)
//   - spawn_sinks(Echo{N: n}) -> Echo{N: n}: spawns n counting actors
//     registered as "sink/0" .. "sink/<n-1>" (they count into sink_get)
//   - blast(Echo{Text: "<node> <name> <senders> <payload>", N: n}) ->
//     Echo{N: n}: sends n messages to the actor registered as name on
//     node from <senders> goroutines, each with its own Sender handle,
//     and returns once every one is handed to the runtime. payload is
//     "bytes" (a Blob of 200 bytes) or "echo" (an Echo of ~200 bytes), or
//     "bytes-vt" / "echo-vt" (the same as VTBlob / VTEcho, which have
//     vtprotobuf's methods).
//     The benchmarks of the receiving path use it.
//   - ack(any) -> Echo{N: 1}: one reply value, built once and shared (the
//     benchmarks of the call path measure the runtime, not the handler)
//   - call_blast(Echo{Text: "<node> <fn> <callers> <payload>", N: n}) ->
//     Echo{N: successes, Text: the last error}: makes n calls of fn on
//     node from <callers> goroutines, each with its own Sender handle
//     (payload as for blast), and returns once every one has returned.
//     The benchmarks of the called side use it.
//   - raw_echo(Echo{N: n}) -> Echo{Text: addr}: a plain TCP listener on
//     addr (started on the first call, closed when the node stops) that
//     answers every length-prefixed frame (u32 big endian) with a frame
//     of n bytes: the round trip with no runtime, the floor the single
//     caller's benchmark compares with
//   - stats(Echo) -> Echo{N: dead letters, Text: "cancelled=<c> sleeping=<s>"}
//     where c counts sleep (and script) calls whose ctx ended early, s
//     those running now
//   - script(Echo{Text: "a=reject,b=sleep300:panic,*=ok,id=t1"}): behaves
//     as the item naming this node says (else the "*" item, else ok):
//     "ok" -> Echo{Text: "ok", N: runs so far, From: node}; "reject" ->
//     rejection with code "rejected"; "panic" -> panics; a "sleepN:"
//     prefix first sleeps N ms, honouring ctx. "id=..." items are
//     ignored (they make a script unique). Every run is counted under
//     the whole Text; script_count(Echo{Text}) -> Echo{N: runs here}.
//
// Named actors:
//   - "echo": answers a request with Echo{Text: "actor "+text, From: node};
//     a plain send from an actor is echoed back to the sender.
//   - "stopper": stops itself when it receives Echo{Text: "stop"}.
//   - "sink": counts every message; sink_get -> Echo{N: count}.
func Install(sys *actor.System) error {
	if err := sys.RegisterTypes(&testpb.Echo{}, &testpb.Blob{}, &testpb.Numbers{}, &testpb.Sleep{},
		&testpb.VTEcho{}, &testpb.VTBlob{}, &testpb.VTRecord{}); err != nil {
		return err
	}
	node := sys.Name()
	var count, cancelled, sleeping, sunk atomic.Int64
	ack := &testpb.Echo{N: 1}
	raw := &rawEcho{}
	var scriptMu sync.Mutex // protects scriptRuns
	scriptRuns := map[string]int64{}
	fns := map[string]actor.Handler{
		"pid_of": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			pid, ok := sys.Lookup(arg.(*testpb.Echo).Text)
			if !ok {
				return nil, actor.Reject("no_name", arg.(*testpb.Echo).Text)
			}
			return &testpb.Echo{Text: pid.String(), From: node}, nil
		},
		"stats": func(context.Context, proto.Message) (proto.Message, error) {
			return &testpb.Echo{N: int64(sys.DeadLetters()), Text: fmt.Sprintf("cancelled=%d sleeping=%d", cancelled.Load(), sleeping.Load()), From: node}, nil
		},
		"echo": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			e := arg.(*testpb.Echo)
			return &testpb.Echo{Text: "echo " + e.Text, N: e.N + 1, From: node}, nil
		},
		"sleep": func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			s := arg.(*testpb.Sleep)
			sleeping.Add(1)
			defer sleeping.Add(-1)
			t := time.NewTimer(time.Duration(s.Millis) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return &testpb.Echo{Text: s.Tag, From: node}, nil
			case <-ctx.Done():
				cancelled.Add(1)
				return nil, ctx.Err()
			}
		},
		"script": func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			text := arg.(*testpb.Echo).Text
			scriptMu.Lock()
			scriptRuns[text]++
			runs := scriptRuns[text]
			scriptMu.Unlock()
			action := scriptAction(text, node)
			if rest, ok := strings.CutPrefix(action, "sleep"); ok {
				ms, after, _ := strings.Cut(rest, ":")
				d, err := strconv.Atoi(ms)
				if err != nil {
					return nil, actor.Reject("bad_script", "bad sleep in "+action)
				}
				action = after
				sleeping.Add(1)
				t := time.NewTimer(time.Duration(d) * time.Millisecond)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					sleeping.Add(-1)
					cancelled.Add(1)
					return nil, ctx.Err()
				}
				sleeping.Add(-1)
			}
			switch action {
			case "", "ok":
				return &testpb.Echo{Text: "ok", N: runs, From: node}, nil
			case "reject":
				return nil, actor.Reject("rejected", "rejected by "+node)
			case "panic":
				panic("script panic on " + node)
			}
			return nil, actor.Reject("bad_script", "unknown action "+action)
		},
		"script_count": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			scriptMu.Lock()
			defer scriptMu.Unlock()
			return &testpb.Echo{N: scriptRuns[arg.(*testpb.Echo).Text], From: node}, nil
		},
		"reject": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			return nil, actor.Reject("rejected", arg.(*testpb.Echo).Text)
		},
		"panic": func(context.Context, proto.Message) (proto.Message, error) {
			panic("test panic on " + node)
		},
		"count": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			n := arg.(*testpb.Echo).N
			if n == 0 {
				n = 1
			}
			count.Add(n)
			return nil, nil
		},
		"call_node": func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			e := arg.(*testpb.Echo)
			target, fn, ok := strings.Cut(e.Text, " ")
			if !ok {
				return nil, actor.Reject("bad_arg", "want \"<node> <fn>\"")
			}
			h := sys.NewSender()
			res := &testpb.Echo{From: node}
			for range e.N {
				if _, err := h.Call(ctx, target, fn, &testpb.Echo{Text: "from " + node}); err != nil {
					res.Text = err.Error()
					continue
				}
				res.N++
			}
			return res, nil
		},
		"spawn_sinks": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			n := arg.(*testpb.Echo).N
			for i := range n {
				name := "sink/" + strconv.FormatInt(i, 10)
				if _, ok := sys.Lookup(name); ok {
					continue
				}
				if _, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
					if _, ok := c.Message().(proto.Message); ok {
						sunk.Add(1)
					}
				}), name); err != nil {
					return nil, err
				}
			}
			return &testpb.Echo{N: n, From: node}, nil
		},
		"raw_echo": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			addr, err := raw.start(sys, int(arg.(*testpb.Echo).N))
			if err != nil {
				return nil, err
			}
			return &testpb.Echo{Text: addr, From: node}, nil
		},
		"ack": func(context.Context, proto.Message) (proto.Message, error) {
			return ack, nil
		},
		"call_blast": func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			e := arg.(*testpb.Echo)
			f := strings.Fields(e.Text)
			if len(f) != 4 {
				return nil, actor.Reject("bad_arg", "want \"<node> <fn> <callers> <payload>\"")
			}
			callers, err := strconv.Atoi(f[2])
			if err != nil || callers < 1 {
				return nil, actor.Reject("bad_arg", "bad caller count "+f[2])
			}
			msg, err := blastPayload(f[3], node)
			if err != nil {
				return nil, err
			}
			var ok atomic.Int64
			var last atomic.Value
			var wg sync.WaitGroup
			for i := range callers {
				n := e.N / int64(callers)
				if int64(i) < e.N%int64(callers) {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					h := sys.NewSender()
					for range n {
						if _, err := h.Call(ctx, f[0], f[1], msg); err != nil {
							last.Store(err.Error())
							continue
						}
						ok.Add(1)
					}
				}()
			}
			wg.Wait()
			res := &testpb.Echo{N: ok.Load(), From: node}
			if s, _ := last.Load().(string); s != "" {
				res.Text = s
			}
			return res, nil
		},
		"blast": func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			e := arg.(*testpb.Echo)
			f := strings.Fields(e.Text)
			if len(f) != 4 {
				return nil, actor.Reject("bad_arg", "want \"<node> <name> <senders> <payload>\"")
			}
			senders, err := strconv.Atoi(f[2])
			if err != nil || senders < 1 {
				return nil, actor.Reject("bad_arg", "bad sender count "+f[2])
			}
			msg, err := blastPayload(f[3], node)
			if err != nil {
				return nil, err
			}
			var wg sync.WaitGroup
			for i := range senders {
				n := e.N / int64(senders)
				if int64(i) < e.N%int64(senders) {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					h := sys.NewSender()
					for range n {
						h.SendNamed(f[0], f[1], msg)
					}
				}()
			}
			wg.Wait()
			return &testpb.Echo{N: e.N, From: node}, nil
		},
		"sink_get": func(context.Context, proto.Message) (proto.Message, error) {
			return &testpb.Echo{N: sunk.Load(), From: node}, nil
		},
		"count_get": func(context.Context, proto.Message) (proto.Message, error) {
			return &testpb.Echo{N: count.Load(), From: node}, nil
		},
		"big": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			b := make([]byte, arg.(*testpb.Echo).N)
			for i := range b {
				b[i] = byte(i * 7)
			}
			return &testpb.Blob{Data: b}, nil
		},
		"numbers": func(_ context.Context, arg proto.Message) (proto.Message, error) {
			v := make([]int64, arg.(*testpb.Echo).N)
			for i := range v {
				v[i] = int64(i) * 3
			}
			return &testpb.Numbers{Values: v}, nil
		},
	}
	for name, h := range fns {
		if err := sys.Register(name, h); err != nil {
			return err
		}
	}
	if _, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		e, ok := c.Message().(*testpb.Echo)
		if !ok {
			return
		}
		reply := &testpb.Echo{Text: "actor " + e.Text, N: e.N, From: node}
		c.Respond(reply)
	}), "echo"); err != nil {
		return err
	}
	if _, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(proto.Message); ok {
			sunk.Add(1)
		}
	}), "sink"); err != nil {
		return err
	}
	if _, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if e, ok := c.Message().(*testpb.Echo); ok && e.Text == "stop" {
			c.Stop(c.Self())
		}
	}), "stopper"); err != nil {
		return err
	}
	return nil
}

// blastPayload is the message blast and call_blast send for payload.
func blastPayload(payload, node string) (proto.Message, error) {
	switch payload {
	case "bytes":
		return &testpb.Blob{Data: make([]byte, 200)}, nil
	case "echo":
		return &testpb.Echo{Text: strings.Repeat("x", 180), N: 1 << 40, From: node}, nil
	case "bytes-vt":
		return &testpb.VTBlob{Data: make([]byte, 200)}, nil
	case "echo-vt":
		return &testpb.VTEcho{Text: strings.Repeat("x", 180), N: 1 << 40, From: node}, nil
	}
	return nil, actor.Reject("bad_arg", "unknown payload "+payload)
}

// scriptAction is the action a script gives node: its own item, else the
// "*" item, else "ok".
func scriptAction(script, node string) string {
	def := "ok"
	for _, item := range strings.Split(script, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		switch k {
		case node:
			return v
		case "*":
			def = v
		}
	}
	return def
}
