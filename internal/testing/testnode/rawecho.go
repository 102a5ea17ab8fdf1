package testnode

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// rawEcho is the catalog's raw_echo: a TCP listener answering every
// length-prefixed frame with a reply frame, no runtime in between.
type rawEcho struct {
	mu   sync.Mutex // protects addr
	addr string
}

// start listens once; the listener and its connections end when sys
// stops. Every frame is answered with a frame of replyLen bytes.
func (r *rawEcho) start(sys *actor.System, replyLen int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.addr != "" {
		return r.addr, nil
	}
	if replyLen < 1 || replyLen > 1<<16 {
		return "", actor.Reject("bad_arg", fmt.Sprintf("reply of %d bytes", replyLen))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	reply := make([]byte, 4+replyLen)
	binary.BigEndian.PutUint32(reply, uint32(replyLen))
	var mu sync.Mutex // protects open
	open := map[net.Conn]bool{}
	go func() {
		<-sys.Done()
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				var hdr [4]byte
				buf := make([]byte, 1<<10)
				for {
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(hdr[:]))
					if n > 1<<20 {
						return
					}
					if cap(buf) < n {
						buf = make([]byte, n)
					}
					if _, err := io.ReadFull(br, buf[:n]); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	r.addr = ln.Addr().String()
	return r.addr, nil
}
