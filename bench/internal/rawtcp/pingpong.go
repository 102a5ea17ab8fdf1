package rawtcp

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/stats"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// CallFrames returns the ping-pong reference's two frames, laid out like
// a mailroom call (internal/wire/SPEC.md) of the bytes payload to the function
// nodeapi.FnCall and its reply carrying an Ack: the single caller's
// frames, without a runtime.
func CallFrames() (call, reply []byte, err error) {
	arg, err := benchpb.Payload(benchpb.ProfileBytes)
	if err != nil {
		return nil, nil, err
	}
	ack := &benchpb.Ack{N: 1}
	payload := func(m proto.Message, b []byte) []byte {
		enc, merr := proto.Marshal(m)
		if merr != nil {
			err = merr
		}
		b = appendString(b, string(proto.MessageName(m)))
		return appendString(b, string(enc))
	}
	body := []byte{0x03}                    // kind: call
	body = binary.AppendUvarint(body, 4242) // id
	body = binary.AppendVarint(body, 0)     // no deadline
	body = appendString(body, nodeapi.FnCall)
	body = payload(arg, body)
	call = binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	call = append(call, body...)

	body = []byte{0x05}                     // kind: reply
	body = binary.AppendUvarint(body, 4242) // id
	body = append(body, 0)                  // status: ok
	body = payload(ack, body)
	reply = binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	reply = append(reply, body...)
	return call, reply, err
}

// readFrame reads one length-prefixed frame into buf (grown if needed,
// up to max) and returns it.
func readFrame(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return buf, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n == 0 || n > limit {
		return buf, fmt.Errorf("rawtcp: frame of %d bytes (want 1..%d)", n, limit)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// RunEcho answers every call frame on every accepted connection with
// the reply frame, the way a callee's reader and writer would.
func RunEcho(nodeapi.RawConfig) error {
	call, reply, err := CallFrames()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReaderSize(c, 64<<10)
				buf := make([]byte, len(call))
				for {
					var err error
					if buf, err = readFrame(r, buf, 1<<20); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	err = ctl.Serve(nodeapi.Ready{Addr: ln.Addr().String()}, map[string]ctl.Handler{
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) { return nodeapi.Status{Connected: true}, nil },
	})
	ln.Close()
	mu.Lock()
	for c := range open {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return err
}

// RunPing, when started, makes cfg.WarmupRTTs and then cfg.RTTs
// sequential round trips over one connection (write the call frame, read
// the reply frame) and records the measured ones' latency.
func RunPing(cfg nodeapi.RawConfig) error {
	call, _, err := CallFrames()
	if err != nil {
		return err
	}
	conn, err := net.Dial("tcp", cfg.Peer)
	if err != nil {
		return fmt.Errorf("rawtcp: dial: %w", err)
	}
	defer conn.Close()
	var lat stats.Hist
	var count, endNs atomic.Int64
	var runErr atomic.Value
	var wg sync.WaitGroup
	h := map[string]ctl.Handler{
		nodeapi.CmdStart: func(json.RawMessage) (any, error) {
			t0 := time.Now()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReaderSize(conn, 64<<10)
				var buf []byte
				for i := range cfg.WarmupRTTs + cfg.RTTs {
					start := time.Now()
					if _, err := conn.Write(call); err != nil {
						runErr.Store(err.Error())
						return
					}
					var err error
					if buf, err = readFrame(r, buf, 1<<20); err != nil {
						runErr.Store(err.Error())
						return
					}
					if i >= cfg.WarmupRTTs {
						lat.Record(time.Since(start))
						count.Add(1)
					}
				}
				endNs.Store(time.Now().UnixNano())
			}()
			return nodeapi.Started{StartNs: t0.UnixNano()}, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			st := nodeapi.Status{Connected: true, Tally: tally.Snapshot{Count: count.Load(), EndNs: endNs.Load()}}
			if runErr.Load() != nil {
				st.Errors = 1
			}
			return st, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			st := nodeapi.Stats{LatP50Ns: int64(lat.Quantile(0.5)), LatP99Ns: int64(lat.Quantile(0.99)), LatMaxNs: int64(lat.Max()), Executed: count.Load()}
			if e := runErr.Load(); e != nil {
				st.Errors, st.Note = 1, e.(string)
			}
			return st, nil
		},
	}
	err = ctl.Serve(nodeapi.Ready{Addr: conn.LocalAddr().String()}, h)
	conn.Close()
	wg.Wait()
	return err
}
