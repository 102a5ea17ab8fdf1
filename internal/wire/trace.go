package wire

// Trace is the W3C trace context a send, cast, call or request carries
// when its caller had a span (SPEC.md, "traced"): the trace id, the
// caller's span id, the trace flags and the tracestate header value. The
// zero Trace is none: such an element is encoded exactly as it was before
// tracing existed, at no cost.
type Trace struct {
	ID    [16]byte
	Span  [8]byte
	Flags uint8
	State string // W3C tracestate, at most MaxTraceState bytes
}

// MaxTraceState bounds a traced frame's tracestate: W3C's 32 members of
// at most 256 bytes each would be 8 KiB, but its propagation guidance
// is to pass on at least 512 bytes; a longer one is a wire error.
const MaxTraceState = 512

// IsZero reports whether t carries no trace.
func (t *Trace) IsZero() bool { return t.ID == [16]byte{} }

// traceable are the kinds a traced frame may wrap.
func traceable(k Kind) bool {
	return k == KindSend || k == KindCast || k == KindCall || k == KindRequest
}

// appendTraceHead encodes the part of a traced body before the wrapped
// kind and body.
func appendTraceHead(dst []byte, t *Trace) []byte {
	dst = append(dst, t.ID[:]...)
	dst = append(dst, t.Span[:]...)
	dst = append(dst, t.Flags)
	return AppendString(dst, t.State)
}

// readTrace decodes a traced body's head into t and returns the wrapped
// kind. Ids of zeros (invalid in W3C) and an oversized tracestate are
// malformed; the tracestate's syntax is the reader's to judge.
func readTrace(d *Dec, t *Trace) Kind {
	if len(d.B) < 16+8+1 {
		d.fail("trace context")
		return 0
	}
	copy(t.ID[:], d.B[:16])
	copy(t.Span[:], d.B[16:24])
	t.Flags = d.B[24]
	d.B = d.B[25:]
	st := d.bytes("tracestate")
	k := Kind(d.U8("traced kind"))
	switch {
	case d.Err != nil:
	case t.ID == [16]byte{}:
		d.malformed("traced frame with a zero trace id")
	case t.Span == [8]byte{}:
		d.malformed("traced frame with a zero span id")
	case len(st) > MaxTraceState:
		d.malformed("tracestate of %d bytes exceeds %d", len(st), MaxTraceState)
	case !traceable(k):
		d.malformed("traced frame wraps %s", k)
	default:
		t.State = string(st)
		return k
	}
	return 0
}

// Unwrap is the kind of what a frame or batch entry of kind k with this
// body carries: the wrapped kind of a traced or headered one (its own
// kind if its head does not decode), k itself otherwise. For a writer accounting for
// encoded entries it never sent.
func Unwrap(k Kind, body []byte) Kind {
	if k == KindHeadered {
		d := Dec{B: body}
		if _, inner := readHeaders(&d); d.Err == nil {
			return Unwrap(inner, d.B)
		}
		return k
	}
	if k != KindTraced {
		return k
	}
	d := Dec{B: body}
	var t Trace
	if inner := readTrace(&d, &t); d.Err == nil {
		return inner
	}
	return k
}
