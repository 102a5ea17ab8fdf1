package rawtcp

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// DataFrame is the reference frame: the data payload sent to "r500".
func DataFrame() ([]byte, error) {
	m, err := benchpb.Payload(benchpb.ProfileData)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return Frame(nodeapi.ReceiverName(500), string(proto.MessageName(m)), b), nil
}

// RunReceiver counts frames on every accepted connection.
func RunReceiver(nodeapi.RawConfig) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	var frames, target, endNs atomic.Int64
	var wg sync.WaitGroup
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				var c Counter
				buf := make([]byte, 256<<10)
				for {
					n, err := conn.Read(buf)
					before := c.Frames
					if ferr := c.Feed(buf[:n]); ferr != nil {
						return
					}
					if d := c.Frames - before; d > 0 {
						if t := target.Load(); frames.Add(d) == t && t > 0 {
							endNs.Store(time.Now().UnixNano())
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a struct {
				Total int64 `json:"total"`
			}
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			frames.Store(0)
			endNs.Store(0)
			target.Store(a.Total)
			return nil, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: true, Tally: tally.Snapshot{Count: frames.Load(), EndNs: endNs.Load()}}, nil
		},
	}
	err = ctl.Serve(nodeapi.Ready{Addr: ln.Addr().String()}, h)
	ln.Close()
	return err
}

// RunSender writes cfg.Frames frames on each of cfg.Conns connections
// when started.
func RunSender(cfg nodeapi.RawConfig) error {
	frame, err := DataFrame()
	if err != nil {
		return err
	}
	buf := Fill(frame, cfg.WriteBytes)
	perWrite := len(buf) / len(frame)
	conns := make([]net.Conn, cfg.Conns)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", cfg.Peer); err != nil {
			return fmt.Errorf("rawtcp: dial: %w", err)
		}
		defer conns[i].Close()
	}
	var wg sync.WaitGroup
	var writeErr atomic.Value
	h := map[string]ctl.Handler{
		nodeapi.CmdStart: func(json.RawMessage) (any, error) {
			t0 := time.Now()
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left := cfg.Frames; left > 0; left -= perWrite {
						b := buf
						if left < perWrite {
							b = buf[:left*len(frame)]
						}
						if _, err := c.Write(b); err != nil {
							writeErr.Store(err.Error())
							return
						}
					}
				}()
			}
			return nodeapi.Started{StartNs: t0.UnixNano()}, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			st := nodeapi.Status{Connected: true}
			if writeErr.Load() != nil {
				st.Errors = 1
			}
			return st, nil
		},
	}
	err = ctl.Serve(nodeapi.Ready{Addr: conns[0].LocalAddr().String()}, h)
	wg.Wait()
	for _, c := range conns {
		_ = c.Close()
	}
	return err
}
