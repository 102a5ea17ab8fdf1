package procfs

import (
	"os"
	"testing"
)

func TestParseStatus(t *testing.T) {
	in := "Name:\tbench\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\nThreads:\t5\n"
	hwm, rss, err := ParseStatus([]byte(in))
	if err != nil || hwm != 2048<<10 || rss != 1024<<10 {
		t.Fatalf("got %d %d %v", hwm, rss, err)
	}
	if _, _, err := ParseStatus([]byte("Name:\tx\n")); err == nil {
		t.Fatal("missing lines accepted")
	}
	if _, _, err := ParseStatus([]byte("VmHWM:\t12 MB\nVmRSS:\t1 kB\n")); err == nil {
		t.Fatal("bad unit accepted")
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command with a space and a parenthesis, utime 250, stime 50.
	in := "42 (we ird) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 100 1000 200"
	got, err := ParseStatCPU([]byte(in))
	if err != nil || got != 3.0 {
		t.Fatalf("got %v %v, want 3", got, err)
	}
	if _, err := ParseStatCPU([]byte("42 (x) S 1 2")); err == nil {
		t.Fatal("short stat accepted")
	}
}

func TestParseIOWChar(t *testing.T) {
	in := "rchar: 10\nwchar: 12345\nsyscr: 1\n"
	got, err := ParseIOWChar([]byte(in))
	if err != nil || got != 12345 {
		t.Fatalf("got %d %v", got, err)
	}
	if _, err := ParseIOWChar([]byte("rchar: 1\n")); err == nil {
		t.Fatal("missing wchar accepted")
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.HWMBytes == 0 || s.RSSBytes == 0 || s.HWMBytes < s.RSSBytes {
		t.Fatalf("implausible memory: %+v", s)
	}
}

func TestParseSystem(t *testing.T) {
	in := "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n"
	s, err := ParseSystem([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.BusySeconds != 1.6 || s.TotalSeconds != 9.8 || s.IRQSeconds != 0.05 || s.StealSeconds != 0 {
		t.Fatalf("%+v", s)
	}
	if _, err := ParseSystem([]byte("intr 1 2\n")); err == nil {
		t.Fatal("no cpu line accepted")
	}
}
