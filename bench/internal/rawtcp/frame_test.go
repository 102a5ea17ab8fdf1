package rawtcp

import (
	"bytes"
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
