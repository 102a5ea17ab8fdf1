package remote

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// frameReader reads whole frames, enforcing the size limit before it
// allocates anything.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next frame's kind and body. The body is valid until the
// next call.
func (fr *frameReader) next() (Kind, []byte, error) {
	var hdr [frameHeader + 1]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:frameHeader])
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: zero-length frame", ErrMalformed)
	}
	if uint64(n) > uint64(fr.max) {
		return 0, nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, n, fr.max)
	}
	k := Kind(hdr[frameHeader])
	if k == 0 || k > maxKindValue {
		return 0, nil, fmt.Errorf("%w 0x%02x", ErrUnknownKind, uint8(k))
	}
	body := int(n) - 1
	if cap(fr.buf) < body || (cap(fr.buf) > 4<<20 && body < 64<<10) {
		fr.buf = make([]byte, body, max(body, 4<<10))
	}
	fr.buf = fr.buf[:body]
	if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, fmt.Errorf("%w: %s frame of %d bytes: %v", ErrTruncated, k, n, err)
	}
	return k, fr.buf, nil
}
