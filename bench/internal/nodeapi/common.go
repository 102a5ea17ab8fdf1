package nodeapi

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"

	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/procfs"
)

// Decode unmarshals a command argument.
func Decode(arg json.RawMessage, v any) error {
	if len(arg) == 0 {
		return fmt.Errorf("nodeapi: missing argument")
	}
	return json.Unmarshal(arg, v)
}

// RSS is this process's resident set now, 0 if unknown.
func RSS() uint64 {
	s, err := procfs.Read(os.Getpid())
	if err != nil {
		return 0
	}
	return s.RSSBytes
}

// Mallocs is the process's heap allocations so far (Stats.Mallocs).
// It stops the world briefly: call it around phases, not in them.
func Mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// profiler runs at most one CPU profile at a time.
type profiler struct {
	mu sync.Mutex // protects f
	f  *os.File
}

// AddProfiling adds the profile-start and profile-stop commands to h.
func AddProfiling(h map[string]ctl.Handler) {
	p := &profiler{}
	h[CmdProfileStart] = func(arg json.RawMessage) (any, error) {
		var a ProfileArg
		if err := Decode(arg, &a); err != nil {
			return nil, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.f != nil {
			return nil, fmt.Errorf("nodeapi: a profile is already running")
		}
		f, err := os.Create(a.Path)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		p.f = f
		return nil, nil
	}
	h[CmdProfileStop] = func(json.RawMessage) (any, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.f == nil {
			return nil, nil
		}
		pprof.StopCPUProfile()
		err := p.f.Close()
		p.f = nil
		return nil, err
	}
}
