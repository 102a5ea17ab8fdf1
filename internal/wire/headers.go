package wire

import (
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
)

// Headers (SPEC.md, "headered"): a send, cast, call or request whose
// caller set string headers (actor.WithHeader) travels as a headered
// frame, its headers ahead of the element exactly as it would travel
// without them (a traced frame included). An element without headers
// is encoded exactly as before headers existed, at no cost.

// headered reports whether el travels as a headered frame.
func (el *Element) headered() bool { return len(el.Headers) > 0 && traceable(el.Kind) }

// checkHeaders refuses headers the peer would close the link on: more
// than actor.MaxHeaders, more than actor.MaxHeaderBytes of keys and
// values, an empty key or a key twice.
func checkHeaders(h actor.Headers) error {
	if len(h) == 0 {
		return nil
	}
	if len(h) > actor.MaxHeaders {
		return fmt.Errorf("%w: %d headers, more than %d: the peer would close the link", actor.ErrBadMessage, len(h), actor.MaxHeaders)
	}
	if n := h.Size(); n > actor.MaxHeaderBytes {
		return fmt.Errorf("%w: headers of %d bytes, more than %d: the peer would close the link", actor.ErrBadMessage, n, actor.MaxHeaderBytes)
	}
	for i := range h {
		if h[i].Key == "" {
			return fmt.Errorf("%w: a header with an empty key", actor.ErrBadMessage)
		}
		for j := 0; j < i; j++ {
			if h[j].Key == h[i].Key {
				return fmt.Errorf("%w: header %q twice", actor.ErrBadMessage, h[i].Key)
			}
		}
	}
	return nil
}

// appendHeadersHead encodes the part of a headered body before the
// wrapped kind: the count, then each key and value.
func appendHeadersHead(dst []byte, h actor.Headers) []byte {
	dst = AppendUvarint(dst, uint64(len(h)))
	for i := range h {
		dst = AppendString(dst, h[i].Key)
		dst = AppendString(dst, h[i].Value)
	}
	return dst
}

// readHeaders decodes a headered body's head and returns the headers and
// the wrapped kind. The count and the bytes are checked against their
// bounds before anything is allocated or copied; an empty or repeated
// key, a count of 0 and a wrapped kind other than send, cast, call,
// request or traced are malformed.
func readHeaders(d *Dec) (actor.Headers, Kind) {
	count := d.uvarint("header count")
	switch {
	case d.Err != nil:
		return nil, 0
	case count == 0:
		d.malformed("headered frame with no headers")
		return nil, 0
	case count > actor.MaxHeaders:
		d.malformed("%d headers exceed %d", count, actor.MaxHeaders)
		return nil, 0
	}
	// Keys and values alias the frame until every bound has been checked.
	var raw [2 * actor.MaxHeaders][]byte
	size := 0
	for i := 0; i < int(count)*2; i++ {
		raw[i] = d.bytes("header")
		if d.Err != nil {
			return nil, 0
		}
		if size += len(raw[i]); size > actor.MaxHeaderBytes {
			d.malformed("headers exceed %d bytes", actor.MaxHeaderBytes)
			return nil, 0
		}
		if i%2 == 0 {
			if len(raw[i]) == 0 {
				d.malformed("header with an empty key")
				return nil, 0
			}
			for j := 0; j < i; j += 2 {
				if string(raw[j]) == string(raw[i]) {
					d.malformed("header key repeated")
					return nil, 0
				}
			}
		}
	}
	k := Kind(d.U8("headered kind"))
	if d.Err != nil {
		return nil, 0
	}
	if !traceable(k) && k != KindTraced {
		d.malformed("headered frame wraps %s", k)
		return nil, 0
	}
	h := make(actor.Headers, count)
	for i := range h {
		h[i] = actor.Header{Key: string(raw[2*i]), Value: string(raw[2*i+1])}
	}
	return h, k
}
