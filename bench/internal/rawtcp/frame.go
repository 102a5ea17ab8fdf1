package rawtcp

import (
	"encoding/binary"
	"fmt"
)

// Frame returns one frame shaped like a mailroom send (internal/wire/SPEC.md) of
// payload (typ is its protobuf full name) to the registered name target.
func Frame(target, typ string, payload []byte) []byte {
	body := []byte{0x01}                  // kind: send
	body = append(body, 1)                // target: by name
	body = appendString(body, target)     // name
	body = append(body, 1)                // sender pid: of the writing node
	body = binary.AppendUvarint(body, 77) // its id
	body = appendString(body, typ)
	body = appendString(body, string(payload))
	f := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(f, body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Fill returns a write buffer of whole frames, at least one, at most
// writeBytes long.
func Fill(frame []byte, writeBytes int) []byte {
	n := max(1, writeBytes/len(frame))
	buf := make([]byte, 0, n*len(frame))
	for range n {
		buf = append(buf, frame...)
	}
	return buf
}

// Counter walks length-prefixed frames across read boundaries.
type Counter struct {
	need   int     // bytes still to skip in the current frame's body
	hdr    [4]byte // a length prefix split across reads
	hdrLen int
	Frames int64
	Bytes  int64
}

// Feed consumes b and counts the frames it completes. A zero length is
// an error, as in mailroom.
func (c *Counter) Feed(b []byte) error {
	c.Bytes += int64(len(b))
	for len(b) > 0 {
		if c.need > 0 {
			k := min(c.need, len(b))
			c.need -= k
			b = b[k:]
			if c.need == 0 {
				c.Frames++
			}
			continue
		}
		k := copy(c.hdr[c.hdrLen:], b)
		c.hdrLen += k
		b = b[k:]
		if c.hdrLen < 4 {
			return nil
		}
		c.hdrLen = 0
		c.need = int(binary.BigEndian.Uint32(c.hdr[:]))
		if c.need == 0 {
			return fmt.Errorf("rawtcp: zero-length frame")
		}
	}
	return nil
}
