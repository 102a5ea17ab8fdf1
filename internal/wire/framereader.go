package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// FrameReader reads whole frames, enforcing the size limit before it
// allocates anything, and growing its buffer as the body arrives, within
// the node's read budget (readbudget.go).
type FrameReader struct {
	r    *bufio.Reader
	max  int
	buf  []byte // the link's buffer, kept between frames up to maxKeep
	held int64  // read budget held for buf: its capacity beyond linkAllowance
	rb   Budget // nil: no budget (tests)
}

// Budget is where a frame reader takes the bytes its buffer holds beyond
// linkAllowance: a node-wide budget of frame buffer bytes, seen from one
// link (its wait bounded by the link's close and patience).
type Budget interface {
	// Take takes n bytes, waiting for them as the link may; an error
	// ends the read.
	Take(n int64) error
	// Give returns n bytes.
	Give(n int64)
	// Pressed reports whether readers should give their buffers back
	// after each frame.
	Pressed() bool
}

const (
	// LinkAllowance is the buffer every link may hold without budget,
	// and where large frames start growing from.
	LinkAllowance = 64 << 10
	// maxKeep is the largest buffer a link keeps between frames.
	maxKeep = 4 << 20
)

func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Budgeted makes the reader take what its buffer holds beyond
// linkAllowance from rb.
func (fr *FrameReader) Budgeted(rb Budget) *FrameReader {
	fr.rb = rb
	return fr
}

// Next returns the next frame's kind and body. The body is valid until the
// next call.
func (fr *FrameReader) Next() (Kind, []byte, error) {
	fr.trim()
	var hdr [FrameHeader + 1]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:FrameHeader])
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: zero-length frame", ErrMalformed)
	}
	if uint64(n) > uint64(fr.max) {
		return 0, nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, n, fr.max)
	}
	k := Kind(hdr[FrameHeader])
	if k == 0 || k > maxKindValue {
		return 0, nil, fmt.Errorf("%w 0x%02x", ErrUnknownKind, uint8(k))
	}
	body := int(n) - 1
	// Read as the bytes arrive, growing the buffer (by doubling) only
	// when what arrived fills it.
	got := 0
	for got < body {
		if got == cap(fr.buf) {
			if err := fr.resize(growth(cap(fr.buf), body), got); err != nil {
				return 0, nil, err
			}
		}
		end := min(body, cap(fr.buf))
		fr.buf = fr.buf[:end]
		if _, err := io.ReadFull(fr.r, fr.buf[got:end]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, fmt.Errorf("%w: %s frame of %d bytes: %v", ErrTruncated, k, n, err)
		}
		got = end
	}
	fr.buf = fr.buf[:body]
	return k, fr.buf, nil
}

// growth is the next capacity of a buffer of capacity c that a body of
// size body overflows: small bodies (up to linkAllowance) get their size
// at once, larger ones double from linkAllowance as their bytes arrive.
func growth(c, body int) int {
	if body <= LinkAllowance {
		return min(max(2*c, 4<<10, body), LinkAllowance)
	}
	return min(max(2*c, LinkAllowance), body)
}

// resize gives buf capacity c, keeping its first got bytes, after taking
// the budget it needs.
func (fr *FrameReader) resize(c, got int) error {
	if fr.rb != nil {
		need := int64(max(c-LinkAllowance, 0)) - fr.held
		if need > 0 {
			if err := fr.rb.Take(need); err != nil {
				return err
			}
			fr.held += need
		}
	}
	nb := make([]byte, got, c)
	copy(nb, fr.buf[:got])
	fr.buf = nb
	return nil
}

// trim gives back, once a frame has been handled, a buffer too large to
// keep, or any budgeted buffer while the budget is pressed.
func (fr *FrameReader) trim() {
	if cap(fr.buf) > maxKeep || (fr.held > 0 && fr.rb.Pressed()) {
		fr.buf = nil
		fr.Release()
	}
}

// Release gives back the budget held (the link's reader has ended, or
// its buffer was dropped).
func (fr *FrameReader) Release() {
	if fr.rb != nil && fr.held > 0 {
		fr.rb.Give(fr.held)
	}
	fr.held = 0
}
