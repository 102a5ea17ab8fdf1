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
)

// Dir is a durable store: one file per key (named by the key's SHA-256)
// in a directory, written to a temporary file, synced and renamed, so a
// record is whole or absent after a crash. It survives a restart of the
// node; it does not bound how long records stay (remove old files as
// your retention says). MaxKeys bounds the files it creates.
type Dir struct {
	dir     string
	maxKeys int

	mu sync.Mutex // protects following (and serialises claims)
	n  int        // records on disk
}

// OpenDir opens (creating) the store in dir; maxKeys <= 0 means 1,000,000.
func OpenDir(dir string, maxKeys int) (*Dir, error) {
	if maxKeys <= 0 {
		maxKeys = 1_000_000
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", dir, err)
	}
	n := 0
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".rec" {
			n++
		}
	}
	return &Dir{dir: dir, maxKeys: maxKeys, n: n}, nil
}

type dirRecord struct {
	Key   string `json:"key"`
	State State  `json:"state"`
	Inc   uint64 `json:"inc"`
	Reply []byte `json:"reply,omitempty"`
	Err   string `json:"err,omitempty"`
}

func (d *Dir) path(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(d.dir, hex.EncodeToString(h[:])+".rec")
}

func (d *Dir) readLocked(key string) (Record, bool, error) {
	b, err := os.ReadFile(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("idempotency: read %q: %w", key, err)
	}
	var r dirRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, false, fmt.Errorf("idempotency: record of %q is corrupt: %w", key, err)
	}
	return Record{State: r.State, Inc: r.Inc, Reply: r.Reply, Err: r.Err}, true, nil
}

func (d *Dir) writeLocked(key string, r Record) error {
	b, err := json.Marshal(dirRecord{Key: key, State: r.State, Inc: r.Inc, Reply: r.Reply, Err: r.Err})
	if err != nil {
		return err
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
	return nil
}

// Claim implements Store.
func (d *Dir) Claim(key string, inc uint64) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok, err := d.readLocked(key); err != nil || ok {
		return r, false, err
	}
	if d.n >= d.maxKeys {
		return Record{}, false, ErrStoreFull
	}
	r := Record{State: Running, Inc: inc}
	if err := d.writeLocked(key, r); err != nil {
		return Record{}, false, err
	}
	d.n++
	return r, true, nil
}

// Put implements Store.
func (d *Dir) Put(key string, r Record) error {
	if err := checkKey(key); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, had, err := d.readLocked(key)
	if err != nil {
		return err
	}
	if !had && d.n >= d.maxKeys {
		return ErrStoreFull
	}
	if err := d.writeLocked(key, r); err != nil {
		return err
	}
	if !had {
		d.n++
	}
	return nil
}

// Get implements Store.
func (d *Dir) Get(key string) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readLocked(key)
}

// Durable implements Store: true.
func (d *Dir) Durable() bool { return true }
