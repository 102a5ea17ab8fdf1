package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// MemoryConfig bounds a Memory store; zero fields take the defaults.
type MemoryConfig struct {
	MaxKeys  int           // default 100,000
	MaxBytes int           // keys, replies and error texts together; default 64 MiB
	TTL      time.Duration // how long a finished record is kept; default 1 h
	Now      func() time.Time
}

// Memory is the default store: bounded, with a TTL, lost with the
// incarnation. Running records never expire (the attempt is alive);
// finished ones go after TTL, oldest first.
type Memory struct {
	cfg MemoryConfig

	mu    sync.Mutex // protects following
	recs  map[string]*list.Element
	order *list.List // of *memEntry, oldest first
	bytes int
}

type memEntry struct {
	key string
	rec Record
	at  time.Time
}

// NewMemory returns an empty Memory store.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100_000
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Memory{cfg: cfg, recs: map[string]*list.Element{}, order: list.New()}
}

func size(key string, r Record) int { return len(key) + len(r.Reply) + len(r.Err) + len(r.Code) + 64 }

// expireLocked drops finished records older than the TTL.
func (m *Memory) expireLocked(now time.Time) {
	for e := m.order.Front(); e != nil; {
		next := e.Next()
		me := e.Value.(*memEntry)
		if now.Sub(me.at) < m.cfg.TTL {
			break
		}
		if me.rec.State != Running {
			m.removeLocked(e)
		}
		e = next
	}
}

func (m *Memory) removeLocked(e *list.Element) {
	me := e.Value.(*memEntry)
	m.bytes -= size(me.key, me.rec)
	delete(m.recs, me.key)
	m.order.Remove(e)
}

// Claim implements Store.
func (m *Memory) Claim(key string, inc uint64) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	m.expireLocked(now)
	if e := m.recs[key]; e != nil {
		return e.Value.(*memEntry).rec, false, nil
	}
	r := Record{State: Running, Inc: inc}
	if err := m.insertLocked(key, r, now); err != nil {
		return Record{}, false, err
	}
	return r, true, nil
}

func (m *Memory) insertLocked(key string, r Record, now time.Time) error {
	if len(m.recs) >= m.cfg.MaxKeys || m.bytes+size(key, r) > m.cfg.MaxBytes {
		return ErrStoreFull
	}
	m.recs[key] = m.order.PushBack(&memEntry{key: key, rec: r, at: now})
	m.bytes += size(key, r)
	return nil
}

// Put implements Store.
func (m *Memory) Put(key string, r Record) error {
	if err := checkKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.recs[key]; e != nil {
		// Replace in place, or keep the old record when the new one does
		// not fit: a running claim is never dropped by a failed Put.
		me := e.Value.(*memEntry)
		if m.bytes-size(key, me.rec)+size(key, r) > m.cfg.MaxBytes {
			return ErrStoreFull
		}
		m.bytes += size(key, r) - size(key, me.rec)
		me.rec, me.at = r, m.cfg.Now()
		m.order.MoveToBack(e)
		return nil
	}
	return m.insertLocked(key, r, m.cfg.Now())
}

// Delete implements Store.
func (m *Memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.recs[key]; e != nil {
		m.removeLocked(e)
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(key string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.cfg.Now())
	if e := m.recs[key]; e != nil {
		return e.Value.(*memEntry).rec, true, nil
	}
	return Record{}, false, nil
}

// Durable implements Store: false.
func (m *Memory) Durable() bool { return false }

// Len is the number of records kept.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}
