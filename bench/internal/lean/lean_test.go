package lean

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunked returns its data in reads of at most n bytes.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// stream returns frames of the given sizes (each body filled with its
// index), through an Outbox, as the sender writes them.
func stream(t *testing.T, sizes []int) ([]byte, [][]byte) {
	t.Helper()
	o := NewOutbox(1 << 30)
	var want [][]byte
	for i, n := range sizes {
		body := bytes.Repeat([]byte{byte(i)}, n)
		want = append(want, body)
		if err := o.Put(wrapperspb.Bytes(body)); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := o.Take(nil)
	if !ok {
		t.Fatal("nothing to take")
	}
	// each frame's body is a BytesValue encoding: compare decoded values
	return got, want
}

func decodeAll(t *testing.T, r io.Reader, size int) ([][]byte, error) {
	t.Helper()
	fr := NewFrameReader(r, size)
	var out [][]byte
	var frames [][]byte
	for {
		var err error
		frames, err = fr.Read(frames[:0])
		for _, f := range frames {
			var v wrapperspb.BytesValue
			if uerr := proto.Unmarshal(f, &v); uerr != nil {
				t.Fatalf("frame does not decode: %v", uerr)
			}
			out = append(out, v.Value)
		}
		if err != nil {
			return out, err
		}
	}
}

// TestFramesAcrossEveryReadBoundary: whatever the reads return, and
// whatever the buffer's size, every frame comes out whole and in order,
// frames larger than the buffer included.
func TestFramesAcrossEveryReadBoundary(t *testing.T) {
	sizes := []int{200, 0, 1, 5000, 200, 70, 200, 3}
	data, want := stream(t, sizes)
	for _, bufSize := range []int{8, 64, 300, 1 << 16} {
		for chunk := 1; chunk <= len(data); chunk += 1 + chunk/3 {
			got, err := decodeAll(t, &chunked{b: data, n: chunk}, bufSize)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("buf %d chunk %d: %v", bufSize, chunk, err)
			}
			if len(got) != len(want) {
				t.Fatalf("buf %d chunk %d: %d frames, want %d", bufSize, chunk, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("buf %d chunk %d: frame %d differs", bufSize, chunk, i)
				}
			}
		}
	}
}

func TestFrameReaderRefusesWhatItCannotTake(t *testing.T) {
	data, _ := stream(t, []int{100})
	if _, err := decodeAll(t, &chunked{b: data[:len(data)-1], n: 7}, 64); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a stream cut inside a frame: %v", err)
	}
	huge := binary.BigEndian.AppendUint32(nil, MaxFrame+1)
	fr := NewFrameReader(bytes.NewReader(huge), 64)
	if _, err := fr.Read(nil); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a frame over the limit: %v", err)
	}
	if len(fr.buf) > 64 {
		t.Fatalf("the reader allocated %d bytes for a frame it refuses", len(fr.buf))
	}
}

// TestOutboxIsBoundedAndLosesNothing: producers wait at the bound, the
// writer takes whatever accumulated, every frame arrives once.
func TestOutboxIsBoundedAndLosesNothing(t *testing.T) {
	m, err := benchpb.Payload(benchpb.ProfileBytes)
	if err != nil {
		t.Fatal(err)
	}
	frame := 4 + proto.Size(m)
	const producers, each = 8, 500
	o := NewOutbox(10 * frame)
	var wg sync.WaitGroup
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := o.Put(m); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var total, takes, biggest int
	var spare []byte
	for total < producers*each*frame {
		b, ok := o.Take(spare)
		if !ok {
			t.Fatal("closed")
		}
		total, takes, biggest = total+len(b), takes+1, max(biggest, len(b))
		spare = b
	}
	wg.Wait()
	if total != producers*each*frame {
		t.Fatalf("%d bytes taken, want %d", total, producers*each*frame)
	}
	if biggest > 11*frame { // the bound, plus the one frame that may cross it
		t.Fatalf("a take of %d bytes: the bound of %d was not kept", biggest, 10*frame)
	}
	o.Close()
	if err := o.Put(m); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if _, ok := o.Take(nil); ok {
		t.Fatal("Take after Close on an empty outbox")
	}
}

func TestCloseReleasesWaitingProducers(t *testing.T) {
	o := NewOutbox(1)
	m := wrapperspb.Bytes([]byte("x"))
	if err := o.Put(m); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Put(m) }() // full: waits
	mb := NewMailbox(1)
	if err := mb.Push([]any{1}); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan error, 1)
	go func() { pushed <- mb.Push([]any{2}) }()
	o.Close()
	mb.Close()
	for _, ch := range []chan error{done, pushed} {
		select {
		case err := <-ch:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("a waiting producer got %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a waiting producer was not released by Close")
		}
	}
	if got, ok := o.Take(nil); !ok || len(got) == 0 {
		t.Fatal("what was put before Close is still taken")
	}
	if got, ok := mb.Drain(nil); !ok || len(got) != 1 {
		t.Fatalf("drain after close: %v %v", got, ok)
	}
	if _, ok := mb.Drain(nil); ok {
		t.Fatal("Drain after Close on an empty mailbox")
	}
}

// TestMailboxKeepsRunsInOrder: runs pushed by one reader come out in
// order, whole, across drains.
func TestMailboxKeepsRunsInOrder(t *testing.T) {
	mb := NewMailbox(100)
	const runs, per = 200, 7
	go func() {
		run := make([]any, per)
		for r := range runs {
			for i := range run {
				run[i] = r*per + i
			}
			if err := mb.Push(run); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	next := 0
	var spare []any
	for next < runs*per {
		got, ok := mb.Drain(spare)
		if !ok {
			t.Fatal("closed")
		}
		for _, v := range got {
			if v.(int) != next {
				t.Fatalf("got %v, want %d", v, next)
			}
			next++
		}
		clear(got)
		spare = got[:0]
	}
}

// TestPutAllocatesNothing: the lean sender marshals into the shared
// buffer; once it has grown, a Put allocates nothing.
func TestPutAllocatesNothing(t *testing.T) {
	m, err := benchpb.Payload(benchpb.ProfileData)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOutbox(1 << 20)
	var spare []byte
	n := testing.AllocsPerRun(2000, func() {
		if err := o.Put(m); err != nil {
			t.Fatal(err)
		}
		if b, _ := o.Take(spare); len(b) > 0 {
			spare = b
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per Put and Take", n)
	}
}
