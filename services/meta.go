package services

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The announced form of a node's services: node metadata, published by
// remote.Node.Announce through discovery (Consul service meta, where the
// discovery layer prefixes each key with "m_") and over every link.
//
// Keys:
//
//	sv        "1:<seq>": this node runs the services layer (format 1);
//	          seq grows with every announcement, so a receiver that gets
//	          them out of order (discovery and links race) keeps the
//	          newest. Every node with services announces it, providers
//	          or not.
//	s<i>      service i (0, 1, ...), the first 512 bytes of its record
//	s<i>_<j>  continuation j (1, 2, ...) of a record longer than 512 bytes
//
// A record is ASCII:
//
//	<name>@<major>.<minor>.<patch>;<defaults>;<functions>
//
// defaults is a comma-separated list of the fields the provider set, each
// a letter and a value: b budget, p backoff, x max backoff, a max
// attempts, d deadline; durations are an integer and a unit (h, m, s, ms,
// us, ns). functions is a comma-separated list of <name>[:i][:d<dur>],
// i for idempotent, d for the function's own deadline. Example:
//
//	search@2.3.1;b10s,p50ms,d2s;query:i,suggest:i:d200ms,reindex
//
// Names never contain '@', ';', ',' or ':' (see Service.Name). Consul
// allows 64 meta pairs (59 for the layers above discovery), keys of
// [A-Za-z0-9_-] and values of up to 512 bytes; Provide refuses a set of
// services that needs more than 59 entries, naming the service.
const (
	metaMarker      = "sv"
	metaFormat      = "1"
	metaChunk       = 512
	metaMaxEntries  = 59
	maxRecordChunks = 16
)

// withdrawnMeta is the announcement of a node that does not run the
// services layer after all (its Start failed): an empty marker, which
// receivers read as "no services layer". Not an empty map: an announcement
// with no entries reads as "nothing announced" and changes nothing.
func withdrawnMeta() map[string]string { return map[string]string{metaMarker: ""} }

var metaKeyRE = regexp.MustCompile(`^s([0-9]{1,3})(?:_([0-9]{1,2}))?$`)

// record is a service as announced: no handlers.
type record struct {
	Name     string
	Version  Version
	Defaults Defaults
	Fns      []fnRecord
}

type fnRecord struct {
	Name       string
	Idempotent bool
	Keyed      bool // runs keyed calls under an idempotency guard ("k")
	Deadline   time.Duration
}

func (r *record) fn(name string) (fnRecord, bool) {
	for _, f := range r.Fns {
		if f.Name == name {
			return f, true
		}
	}
	return fnRecord{}, false
}

// encode is the record's announced text.
func (r *record) encode() string {
	var b strings.Builder
	b.WriteString(r.Name)
	b.WriteByte('@')
	b.WriteString(r.Version.String())
	b.WriteByte(';')
	var d []string
	p := r.Defaults.Retry
	if p.Budget != 0 {
		d = append(d, "b"+fmtDur(p.Budget))
	}
	if p.Backoff != 0 {
		d = append(d, "p"+fmtDur(p.Backoff))
	}
	if p.MaxBackoff != 0 {
		d = append(d, "x"+fmtDur(p.MaxBackoff))
	}
	if p.MaxAttempts != 0 {
		d = append(d, "a"+strconv.Itoa(p.MaxAttempts))
	}
	if r.Defaults.Deadline != 0 {
		d = append(d, "d"+fmtDur(r.Defaults.Deadline))
	}
	b.WriteString(strings.Join(d, ","))
	b.WriteByte(';')
	for i, f := range r.Fns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Name)
		if f.Idempotent {
			b.WriteString(":i")
		}
		if f.Keyed {
			b.WriteString(":k")
		}
		if f.Deadline != 0 {
			b.WriteString(":d" + fmtDur(f.Deadline))
		}
	}
	return b.String()
}

// fmtDur writes d as an integer and the largest unit that divides it.
func fmtDur(d time.Duration) string {
	units := []struct {
		u    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	for _, u := range units {
		if d%u.u == 0 {
			return strconv.FormatInt(int64(d/u.u), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// decodeRecord parses one record.
func decodeRecord(s string) (*record, error) {
	head, rest, ok := strings.Cut(s, ";")
	defs, fns, ok2 := strings.Cut(rest, ";")
	name, ver, ok3 := strings.Cut(head, "@")
	if !ok || !ok2 || !ok3 {
		return nil, fmt.Errorf("record %q: want name@version;defaults;functions", s)
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("record %q: bad service name", s)
	}
	v, err := ParseVersion(ver)
	if err != nil {
		return nil, fmt.Errorf("record %q: %w", s, err)
	}
	r := &record{Name: name, Version: v}
	if defs != "" {
		for _, item := range strings.Split(defs, ",") {
			if err := r.setDefault(item); err != nil {
				return nil, fmt.Errorf("record %q: %w", s, err)
			}
		}
	}
	for _, item := range strings.Split(fns, ",") {
		parts := strings.Split(item, ":")
		f := fnRecord{Name: parts[0]}
		if !nameRE.MatchString(f.Name) {
			return nil, fmt.Errorf("record %q: bad function name %q", s, f.Name)
		}
		for _, flag := range parts[1:] {
			switch {
			case flag == "i":
				f.Idempotent = true
			case flag == "k":
				f.Keyed = true
			case strings.HasPrefix(flag, "d"):
				if f.Deadline, err = parseDur(flag[1:]); err != nil {
					return nil, fmt.Errorf("record %q: function %s: %w", s, f.Name, err)
				}
			default:
				return nil, fmt.Errorf("record %q: function %s: unknown flag %q", s, f.Name, flag)
			}
		}
		r.Fns = append(r.Fns, f)
	}
	return r, nil
}

func (r *record) setDefault(item string) error {
	if item == "" {
		return fmt.Errorf("empty default")
	}
	val := item[1:]
	var err error
	switch item[0] {
	case 'b':
		r.Defaults.Retry.Budget, err = parseDur(val)
	case 'p':
		r.Defaults.Retry.Backoff, err = parseDur(val)
	case 'x':
		r.Defaults.Retry.MaxBackoff, err = parseDur(val)
	case 'd':
		r.Defaults.Deadline, err = parseDur(val)
	case 'a':
		r.Defaults.Retry.MaxAttempts, err = strconv.Atoi(val)
		if err == nil && r.Defaults.Retry.MaxAttempts < Unlimited {
			err = fmt.Errorf("max attempts %d", r.Defaults.Retry.MaxAttempts)
		}
	default:
		return fmt.Errorf("unknown default %q", item)
	}
	if err != nil {
		return fmt.Errorf("default %q: %w", item, err)
	}
	return nil
}

func parseDur(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}

// encodeMeta is the metadata announcing recs. The error names the service
// that does not fit.
func encodeMeta(recs []*record, seq uint64) (map[string]string, error) {
	meta := map[string]string{metaMarker: metaFormat + ":" + strconv.FormatUint(seq, 10)}
	for i, r := range recs {
		text := r.encode()
		chunks := (len(text) + metaChunk - 1) / metaChunk
		if chunks > maxRecordChunks {
			return nil, fmt.Errorf("services: %s@%v: its record is %d bytes, more than %d meta values of %d bytes", r.Name, r.Version, len(text), maxRecordChunks, metaChunk)
		}
		if len(meta)+chunks > metaMaxEntries {
			return nil, fmt.Errorf("services: %s@%v: announcing it needs %d more meta entries; %d are used and discovery allows %d (Consul's limit)", r.Name, r.Version, chunks, len(meta), metaMaxEntries)
		}
		for j := 0; j < chunks; j++ {
			key := "s" + strconv.Itoa(i)
			if j > 0 {
				key += "_" + strconv.Itoa(j)
			}
			meta[key] = text[j*metaChunk : min(len(text), (j+1)*metaChunk)]
		}
	}
	return meta, nil
}

// decodeMeta reads what a node announced: whether it runs services, its
// records, and the records it could not read.
func decodeMeta(meta map[string]string) (marker bool, recs []*record, errs []error) {
	marker = meta[metaMarker] != ""
	chunks := map[int]map[int]string{}
	for k, v := range meta {
		m := metaKeyRE.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		j := 0
		if m[2] != "" {
			j, _ = strconv.Atoi(m[2])
		}
		if chunks[i] == nil {
			chunks[i] = map[int]string{}
		}
		chunks[i][j] = v
	}
	idx := make([]int, 0, len(chunks))
	for i := range chunks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		text, err := assemble(chunks[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("service s%d: %w", i, err))
			continue
		}
		r, err := decodeRecord(text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs = append(recs, r)
	}
	return marker, recs, errs
}

// assemble joins chunks 0..n-1.
func assemble(chunks map[int]string) (string, error) {
	var b strings.Builder
	for j := 0; j < len(chunks); j++ {
		part, ok := chunks[j]
		if !ok {
			return "", fmt.Errorf("chunk %d missing", j)
		}
		b.WriteString(part)
	}
	return b.String(), nil
}
