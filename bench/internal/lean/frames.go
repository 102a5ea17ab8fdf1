package lean

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxFrame is the largest frame a FrameReader accepts (mailroom's
// default MaxFrameSize): a longer length prefix is an error before
// anything is allocated for it.
const MaxFrame = 64 << 20

// FrameReader splits a stream of u32be-length-prefixed frames.
type FrameReader struct {
	r          io.Reader
	buf        []byte
	start, end int // buf[start:end] is read but not yet returned
}

// NewFrameReader reads r through a buffer of size bytes (it grows, up to
// one MaxFrame, for a frame that does not fit).
func NewFrameReader(r io.Reader, size int) *FrameReader {
	return &FrameReader{r: r, buf: make([]byte, max(size, 8))}
}

// Read reads once and appends to frames every frame completed so far;
// the slices alias the reader's buffer and are valid until the next Read.
// It may return no frame (the read ended inside one). At the end of the
// stream it returns io.EOF, or io.ErrUnexpectedEOF inside a frame.
func (f *FrameReader) Read(frames [][]byte) ([][]byte, error) {
	if f.start == f.end {
		f.start, f.end = 0, 0
	}
	need := 4 // bytes the frame in progress needs from f.start
	if f.end-f.start >= 4 {
		size := int(binary.BigEndian.Uint32(f.buf[f.start:]))
		if size > MaxFrame {
			return frames, fmt.Errorf("lean: frame of %d bytes over the %d limit", size, MaxFrame)
		}
		need += size
	}
	switch {
	case need > len(f.buf): // a frame bigger than the buffer
		grown := make([]byte, need)
		f.end = copy(grown, f.buf[f.start:f.end])
		f.buf, f.start = grown, 0
	case f.start+need > len(f.buf) || (f.start > 0 && len(f.buf)-f.end < len(f.buf)/2):
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	for f.end-f.start >= 4 {
		size := int(binary.BigEndian.Uint32(f.buf[f.start:]))
		if size > MaxFrame {
			return frames, fmt.Errorf("lean: frame of %d bytes over the %d limit", size, MaxFrame)
		}
		if f.end-f.start-4 < size {
			break
		}
		frames = append(frames, f.buf[f.start+4:f.start+4+size])
		f.start += 4 + size
	}
	if err == io.EOF && f.start != f.end {
		err = io.ErrUnexpectedEOF
	}
	return frames, err
}
