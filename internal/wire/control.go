package wire

import "github.com/mailroom-go/mailroom/actor"

// ControlOp is the operation of a control frame.
type ControlOp uint8

const (
	// CtlWatch: Watcher (on the writer) watches Target (on the reader).
	CtlWatch ControlOp = 1
	// CtlUnwatch cancels a CtlWatch.
	CtlUnwatch ControlOp = 2
	// CtlTerminated: Target (on the writer) ended; Watcher is on the reader.
	// Status/Code/Message carry the reason (StatusOK = a normal stop).
	CtlTerminated ControlOp = 3
	// CtlAnnounce: the writer's draining flag and metadata (services).
	CtlAnnounce ControlOp = 4
	// CtlFence: Links are the writer's ids of links to the reader that the
	// writer abandoned; the reader delivers nothing after the fence until
	// those links' readers have ended (supersede.go).
	CtlFence ControlOp = 5
	// CtlIdleClose: the writer closes this link, which it dialed, because
	// it was idle; no fields. It writes nothing after it but its
	// half-close; the reader writes nothing more on it either, and closes
	// it once read to the end. Neither incarnation is affected.
	CtlIdleClose ControlOp = 6
	maxControlOp           = CtlIdleClose
)

// Control is the body of a control frame.
type Control struct {
	Op       ControlOp
	Watcher  actor.PID
	Target   actor.PID
	Status   Status
	Code     string
	Message  string
	Draining bool
	Meta     map[string]string
	Links    []uint64
}

// MaxFenceLinks bounds a fence.
const MaxFenceLinks = 64

// maxMetaEntries bounds an announce so a hostile peer cannot make us
// build a huge map from a small frame... the frame size bounds it too.
const maxMetaEntries = 4096

func (e *Ends) appendControl(dst []byte, c *Control) []byte {
	dst = append(dst, byte(c.Op))
	switch c.Op {
	case CtlWatch, CtlUnwatch:
		dst = e.appendPID(dst, c.Watcher)
		dst = e.appendPID(dst, c.Target)
	case CtlTerminated:
		dst = e.appendPID(dst, c.Watcher)
		dst = e.appendPID(dst, c.Target)
		dst = append(dst, byte(c.Status))
		dst = AppendString(dst, c.Code)
		dst = AppendString(dst, c.Message)
	case CtlAnnounce:
		if c.Draining {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
		dst = AppendUvarint(dst, uint64(len(c.Meta)))
		for k, v := range c.Meta {
			dst = AppendString(dst, k)
			dst = AppendString(dst, v)
		}
	case CtlFence:
		dst = AppendUvarint(dst, uint64(len(c.Links)))
		for _, id := range c.Links {
			dst = AppendUvarint(dst, id)
		}
	}
	return dst
}

func (e *Ends) readControl(d *Dec) *Control {
	c := &Control{Op: ControlOp(d.U8("control op"))}
	switch c.Op {
	case CtlWatch, CtlUnwatch:
		c.Watcher = e.readPID(d)
		c.Target = e.readPID(d)
	case CtlTerminated:
		c.Watcher = e.readPID(d)
		c.Target = e.readPID(d)
		c.Status = Status(d.U8("status"))
		if c.Status > maxStatus && d.Err == nil {
			d.malformed("terminated status %d", c.Status)
		}
		c.Code = d.text("code", MaxNameLen)
		c.Message = d.text("message", MaxErrorText)
	case CtlFence:
		n := d.uvarint("fence count")
		if n > MaxFenceLinks && d.Err == nil {
			d.malformed("%d fenced links (max %d)", n, MaxFenceLinks)
		}
		for i := uint64(0); d.Err == nil && i < n; i++ {
			c.Links = append(c.Links, d.uvarint("fenced link"))
		}
	case CtlIdleClose:
	case CtlAnnounce:
		switch v := d.U8("draining"); v {
		case 0, 1:
			c.Draining = v == 1
		default:
			d.malformed("draining flag %d", v)
		}
		n := d.uvarint("meta count")
		if n > maxMetaEntries && d.Err == nil {
			d.malformed("%d meta entries (max %d)", n, maxMetaEntries)
		}
		if d.Err == nil && n > 0 {
			c.Meta = make(map[string]string, min(n, 64))
			for range n {
				k := d.Str("meta key")
				v := d.Str("meta value")
				if d.Err != nil {
					break
				}
				c.Meta[k] = v
			}
		}
	default:
		if d.Err == nil {
			d.malformed("control op %d", c.Op)
		}
	}
	return c
}
