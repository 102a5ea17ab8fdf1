package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// DirConfig bounds a Dir store; zero fields take the defaults.
type DirConfig struct {
	MaxKeys  int   // records kept; default 1,000,000
	MaxBytes int64 // bytes of the record files together; default 1 GiB
}

// Dir is a durable store: one file per key (named by the key's SHA-256)
// in a directory, written to a temporary file, synced and renamed, so a
// record is whole or absent after a crash. It survives a restart of the
// node; it does not bound how long records stay (remove old files as
// your retention says). DirConfig bounds the records it keeps in count
// and bytes: past either, new keys are refused with ErrStoreFull.
type Dir struct {
	dir string
	cfg DirConfig

	mu    sync.Mutex // protects following (and serialises claims)
	n     int        // records on disk
	bytes int64      // their sizes together
}

// OpenDir opens (creating) the store in dir, counting the records an
// earlier incarnation left there.
func OpenDir(dir string, cfg DirConfig) (*Dir, error) {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 1_000_000
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 30
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", dir, err)
	}
	d := &Dir{dir: dir, cfg: cfg}
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".rec" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("idempotency: open %s: %w", dir, err)
		}
		d.n++
		d.bytes += fi.Size()
	}
	return d, nil
}

type dirRecord struct {
	Key     string          `json:"key"`
	State   State           `json:"state"`
	Inc     uint64          `json:"inc"`
	Reply   []byte          `json:"reply,omitempty"`
	Err     string          `json:"err,omitempty"`
	Code    string          `json:"code,omitempty"`
	Outcome actor.Execution `json:"outcome,omitempty"`
	Attempt uint64          `json:"attempt,omitempty"`
}

func (d *Dir) path(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(d.dir, hex.EncodeToString(h[:])+".rec")
}

// readLocked is key's record and the size of its file (0: none).
func (d *Dir) readLocked(key string) (Record, int64, error) {
	b, err := os.ReadFile(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, 0, nil
	}
	if err != nil {
		return Record{}, 0, fmt.Errorf("idempotency: read %q: %w", key, err)
	}
	var r dirRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, 0, fmt.Errorf("idempotency: record of %q is corrupt: %w", key, err)
	}
	return Record{State: r.State, Inc: r.Inc, Reply: r.Reply, Err: r.Err, Code: r.Code, Outcome: r.Outcome, Attempt: r.Attempt}, max(int64(len(b)), 1), nil
}

// writeLocked replaces key's record, whose file had old bytes (0: none),
// within the bounds.
func (d *Dir) writeLocked(key string, r Record, old int64) error {
	b, err := json.Marshal(dirRecord{Key: key, State: r.State, Inc: r.Inc, Reply: r.Reply, Err: r.Err, Code: r.Code, Outcome: r.Outcome, Attempt: r.Attempt})
	if err != nil {
		return err
	}
	if old == 0 && d.n >= d.cfg.MaxKeys || d.bytes-old+int64(len(b)) > d.cfg.MaxBytes {
		return ErrStoreFull
	}
	f, err := os.CreateTemp(d.dir, "tmp-*")
	if err != nil {
		return fmt.Errorf("idempotency: write %q: %w", key, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("idempotency: write %q: %w", key, err)
	}
	if old == 0 {
		d.n++
	}
	d.bytes += int64(len(b)) - old
	return nil
}

// Claim implements Store.
func (d *Dir) Claim(key string, inc uint64) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, size, err := d.readLocked(key); err != nil || size > 0 {
		return r, false, err
	}
	r := Record{State: Running, Inc: inc}
	if err := d.writeLocked(key, r, 0); err != nil {
		return Record{}, false, err
	}
	return r, true, nil
}

// Put implements Store.
func (d *Dir) Put(key string, r Record) error {
	if err := checkKey(key); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, size, err := d.readLocked(key)
	if err != nil {
		return err
	}
	return d.writeLocked(key, r, size)
}

// Delete implements Store.
func (d *Dir) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fi, err := os.Stat(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = os.Remove(d.path(key))
	}
	if err != nil {
		return fmt.Errorf("idempotency: delete %q: %w", key, err)
	}
	d.n--
	d.bytes -= fi.Size()
	return nil
}

// Get implements Store.
func (d *Dir) Get(key string) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r, size, err := d.readLocked(key)
	return r, size > 0, err
}

// Len is the number of records kept.
func (d *Dir) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// Durable implements Store: true.
func (d *Dir) Durable() bool { return true }
