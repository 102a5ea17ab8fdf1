package rawtcp

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

func TestCounterAcrossEveryReadBoundary(t *testing.T) {
	f := Frame("r12", "mailroom.bench.Data", bytes.Repeat([]byte{7}, 224))
	stream := Fill(f, 5*len(f)+3) // five frames
	for split := 1; split <= len(stream); split += 7 {
		var c Counter
		for b := stream; len(b) > 0; {
			k := min(split, len(b))
			if err := c.Feed(b[:k]); err != nil {
				t.Fatal(err)
			}
			b = b[k:]
		}
		if c.Frames != 5 || c.need != 0 || c.hdrLen != 0 {
			t.Fatalf("split %d: %d frames, need %d, hdr %d", split, c.Frames, c.need, c.hdrLen)
		}
	}
}

func TestFrameSizeAndFill(t *testing.T) {
	f := Frame("r999", "mailroom.bench.Data", make([]byte, 224))
	if len(f) < 250 || len(f) > 270 {
		t.Fatalf("frame of %d bytes, want about 260", len(f))
	}
	if got := len(Fill(f, 10)); got != len(f) {
		t.Fatalf("Fill below one frame gave %d bytes", got)
	}
	var c Counter
	if err := c.Feed([]byte{0, 0, 0, 0}); err == nil {
		t.Fatal("zero length accepted")
	}
}

func TestCallFramesAreAMailroomCallAndItsReply(t *testing.T) {
	call, reply, err := CallFrames()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(append(append([]byte(nil), call...), reply...)))
	c, err := readFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c[0] != 0x03 || !bytes.Contains(c, []byte("bench.call")) || !bytes.Contains(c, []byte("google.protobuf.BytesValue")) {
		t.Fatalf("call frame %x", c)
	}
	if len(call) < 4+1+200+30 || len(call) > 4+1+200+60 {
		t.Fatalf("call frame of %d bytes, want a 200-byte payload and a call's header", len(call))
	}
	rp, err := readFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if rp[0] != 0x05 || !bytes.Contains(rp, []byte("mailroom.bench.Ack")) {
		t.Fatalf("reply frame %x", rp)
	}
	if _, err := readFrame(r, nil, 1<<20); err != io.EOF {
		t.Fatalf("after the two frames: %v", err)
	}
	for _, bad := range [][]byte{{0, 0, 0, 0}, {0, 0x20, 0, 0}} {
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(bad)), nil, 1<<20); err == nil || err == io.EOF {
			t.Fatalf("frame header %x accepted: %v", bad, err)
		}
	}
}
