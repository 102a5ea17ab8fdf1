package lean

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Bounds of the two buffers, and the reader's buffer.
const (
	outboxBytes  = 4 << 20
	mailboxMsgs  = 1 << 16
	readBufBytes = 256 << 10
	dialTimeout  = 10 * time.Second
)

// RunReceiver runs the lean receiver role until the controller says quit:
// one reader per accepted connection, one mailbox, one consumer.
func RunReceiver(cfg nodeapi.Config) error {
	s := cfg.Spec
	payload, err := benchpb.Payload(s.Payload)
	if err != nil {
		return err
	}
	typ := payload.ProtoReflect().Type()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	baseRSS := nodeapi.RSS()
	t := tally.New(s.Writers)
	mb := NewMailbox(mailboxMsgs)
	var conns, bytesIn atomic.Int64
	var errs atomic.Int64
	var firstErr atomic.Value
	firstErr.Store("")
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap("", err.Error())
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the consumer: drains and counts, as a receiving actor does
		defer wg.Done()
		var spare []any
		for {
			got, ok := mb.Drain(spare)
			if !ok {
				return
			}
			for i, m := range got {
				if _, ok := m.(proto.Message); ok {
					t.HitAny()
				}
				got[i] = nil
			}
			spare = got[:0]
		}
	}()
	var readers sync.WaitGroup
	var mu sync.Mutex // protects open
	open := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			conns.Add(1)
			readers.Add(1)
			go func() {
				defer readers.Done()
				defer c.Close()
				if err := read(c, typ.New, mb, &bytesIn); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, ErrClosed) {
					fail(err)
				}
			}()
		}
	}()

	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Arm
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			t.Arm(a.PerWriter, int64(a.PerWriter)*int64(s.Writers))
			errs.Store(0)
			return nil, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: conns.Load() > 0, Tally: t.Read(), Errors: errs.Load()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			return nodeapi.Stats{BytesIn: uint64(bytesIn.Load()), Errors: errs.Load(), Executed: t.Read().Count,
				Mallocs: nodeapi.Mallocs(), Note: firstErr.Load().(string)}, nil
		},
	}
	nodeapi.AddProfiling(h)
	err = ctl.Serve(nodeapi.Ready{Addr: ln.Addr().String(), BaseRSS: baseRSS}, h)
	ln.Close()
	mu.Lock()
	for c := range open {
		c.Close()
	}
	mu.Unlock()
	mb.Close()
	readers.Wait()
	wg.Wait()
	return err
}

// read is a connection's reader: the frames of every read are decoded
// into fresh messages and pushed to mb as one run. It returns when the
// connection ends, never with a nil error: the error says why.
func read(c net.Conn, fresh func() protoreflect.Message, mb *Mailbox, bytesIn *atomic.Int64) error {
	fr := NewFrameReader(c, readBufBytes)
	frames := make([][]byte, 0, 1024)
	run := make([]any, 0, 1024)
	for {
		var err error
		frames, err = fr.Read(frames[:0])
		var n int64
		for _, b := range frames {
			n += int64(4 + len(b))
			m := fresh().Interface()
			if uerr := proto.Unmarshal(b, m); uerr != nil {
				return fmt.Errorf("lean: bad frame: %w", uerr)
			}
			run = append(run, m)
		}
		bytesIn.Add(n)
		if len(run) > 0 {
			if perr := mb.Push(run); perr != nil {
				return perr
			}
			clear(run)
			run = run[:0]
		}
		if err != nil {
			return err
		}
	}
}

// RunSender runs the lean sender role until the controller says quit:
// goroutine writers Put into one Outbox, one writer goroutine writes it
// to one connection.
func RunSender(cfg nodeapi.Config) error {
	s := cfg.Spec
	payload, err := benchpb.Payload(s.Payload)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", cfg.Peer, dialTimeout)
	if err != nil {
		return fmt.Errorf("lean: dial the receiver: %w", err)
	}
	defer conn.Close()
	baseRSS := nodeapi.RSS()
	out := NewOutbox(outboxBytes)
	var bytesOut, errs atomic.Int64
	var firstErr atomic.Value
	firstErr.Store("")
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap("", err.Error())
	}
	var writerDone sync.WaitGroup
	writerDone.Add(1)
	go func() { // the one writer: whatever has accumulated, one write call
		defer writerDone.Done()
		var spare []byte
		for {
			b, ok := out.Take(spare)
			if !ok {
				return
			}
			n, err := conn.Write(b)
			bytesOut.Add(int64(n))
			if err != nil {
				fail(err)
				out.Close()
				return
			}
			spare = b
		}
	}()
	var writers sync.WaitGroup
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(json.RawMessage) (any, error) {
			errs.Store(0)
			return nil, nil
		},
		nodeapi.CmdStart: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Start
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			t0 := time.Now()
			for range s.Writers {
				writers.Add(1)
				go func() {
					defer writers.Done()
					for range a.PerWriter {
						if err := out.Put(payload); err != nil {
							fail(err)
							return
						}
					}
				}()
			}
			return nodeapi.Started{StartNs: t0.UnixNano()}, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: true, Errors: errs.Load()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			return nodeapi.Stats{BytesOut: uint64(bytesOut.Load()), Errors: errs.Load(), Mallocs: nodeapi.Mallocs(), Note: firstErr.Load().(string)}, nil
		},
	}
	nodeapi.AddProfiling(h)
	err = ctl.Serve(nodeapi.Ready{Addr: conn.LocalAddr().String(), BaseRSS: baseRSS}, h)
	out.Close()
	writers.Wait()
	writerDone.Wait()
	return err
}
