package actor

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Middleware. Receive middleware wraps an actor's Receive: each message
// handed to Receive (lifecycle messages included; a BatchReceiver's
// ReceiveBatch is not wrapped) goes through the System's middleware
// (Config.ReceiveMiddleware), outermost first, then the actor's own
// (Props.ReceiveMiddleware), then Receive. A middleware that does not
// call next drops the message (it is handled: nothing is counted). It
// runs on the actor's goroutine with the actor's Context, so it may read
// Context.Headers, Respond, or recover a panic of what it wraps.
//
// Send middleware wraps what leaves a sender: the Send, SendNamed,
// Request, RequestNamed, Call and Cast of a Context (the actor's own
// middleware, Props.SendMiddleware, outermost, then the System's), of a
// Sender handle and of the System's own methods (the System's,
// Config.SendMiddleware). It may change the ctx it passes on (set headers
// with WithHeader), the message, or refuse by returning an error without
// calling next: a refused send is a dead letter, a refused request or
// call returns the error. Answers (Respond) and timer messages do not go
// through it. It runs on the sender's goroutine.

// ReceiveMiddleware wraps the next handler of a message.
type ReceiveMiddleware func(next ReceiveFunc) ReceiveFunc

// SendOp is the operation an OutMessage is.
type SendOp uint8

const (
	OpSend    SendOp = iota + 1 // Send or SendNamed: no answer
	OpRequest                   // Request or RequestNamed
	OpCall                      // Call: Name is the function
	OpCast                      // Cast: Name is the function
)

func (o SendOp) String() string {
	switch o {
	case OpSend:
		return "send"
	case OpRequest:
		return "request"
	case OpCall:
		return "call"
	case OpCast:
		return "cast"
	}
	return fmt.Sprintf("SendOp(%d)", uint8(o))
}

// OutMessage is a message on its way out, as send middleware sees it.
type OutMessage struct {
	Op     SendOp
	Sender PID // the sending actor or handle; zero for the System's methods
	// To is the target of a send or request to a PID; Node and Name
	// those of a send or request to a registered name, or of a call or
	// cast (Name is the function).
	To         PID
	Node, Name string
	// Msg is the message, or a call's or cast's argument (a
	// proto.Message).
	Msg any
}

// SendFunc sends om with ctx (its headers and trace); for a request or
// call it returns the answer, for a send or cast nil and the error that
// made it a dead letter (nil when it was handed on).
type SendFunc func(ctx context.Context, om *OutMessage) (any, error)

// SendMiddleware wraps the next sender of a message.
type SendMiddleware func(next SendFunc) SendFunc

// mwActor is an actor whose Receive goes through middleware.
type mwActor struct {
	Actor
	recv ReceiveFunc
}

func (a *mwActor) Receive(c *Context) { a.recv(c) }

// wrapReceive is a with sys's and props's receive middleware, or a itself
// when there is none.
func wrapReceive(a Actor, sys, own []ReceiveMiddleware) Actor {
	if len(sys)+len(own) == 0 {
		return a
	}
	f := ReceiveFunc(func(c *Context) { c.proc.behave(a) })
	for i := len(own) - 1; i >= 0; i-- {
		f = own[i](f)
	}
	for i := len(sys) - 1; i >= 0; i-- {
		f = sys[i](f)
	}
	return &mwActor{Actor: a, recv: f}
}

// chainSend is next wrapped by mws, the first outermost.
func chainSend(next SendFunc, mws []SendMiddleware) SendFunc {
	for i := len(mws) - 1; i >= 0; i-- {
		next = mws[i](next)
	}
	return next
}

// sendDirect is the end of every send middleware chain: the operation
// itself.
func (s *System) sendDirect(ctx context.Context, om *OutMessage) (any, error) {
	switch om.Op {
	case OpSend:
		if om.Name != "" {
			s.sendNamed(ctx, om.Sender, om.Node, om.Name, om.Msg)
		} else {
			s.send(ctx, om.Sender, om.To, om.Msg)
		}
		return nil, nil
	case OpRequest:
		if om.Name != "" {
			return s.requestNamed(ctx, om.Sender, om.Node, om.Name, om.Msg)
		}
		return s.request(ctx, om.Sender, om.To, om.Msg)
	case OpCall, OpCast:
		arg, ok := om.Msg.(proto.Message)
		if !ok && om.Msg != nil {
			return nil, NewError(om.Op.String(), om.Node, 0, om.Name, fmt.Errorf("%w: %T is not a proto.Message", ErrBadMessage, om.Msg))
		}
		if om.Op == OpCast {
			s.cast(ctx, om.Sender, om.Node, om.Name, arg)
			return nil, nil
		}
		return s.call(ctx, om.Sender, om.Node, om.Name, arg)
	}
	return nil, fmt.Errorf("actor: unknown send op %d", om.Op)
}

// viaSend runs om through f, the sender's middleware chain. A send or
// cast that f refused (the end of the chain counts its own dead letters
// and returns no error for them) is a dead letter.
func (s *System) viaSend(f SendFunc, ctx context.Context, om *OutMessage) (any, error) {
	v, err := f(ctx, om)
	if err != nil && (om.Op == OpSend || om.Op == OpCast) {
		to := om.To
		if om.Name != "" {
			to = PID{Node: om.Node}
		}
		s.deadLetter(to, om.Sender, om.Msg, err)
	}
	return v, err
}

// sendMW is the send middleware chain of what this actor sends, or nil.
func (p *process) sendMW() SendFunc {
	if p.ext != nil && p.ext.send != nil {
		return p.ext.send
	}
	return p.sys.sendMW
}

// The ...Via functions are the operations of the public methods: through
// f, the sender's send middleware chain, or, when f is nil (no
// middleware), straight to the operation at no cost.

func (s *System) sendVia(f SendFunc, ctx context.Context, sender, to PID, msg any) {
	if f == nil {
		s.send(ctx, sender, to, msg)
		return
	}
	s.viaSend(f, ctx, &OutMessage{Op: OpSend, Sender: sender, To: to, Msg: msg})
}

func (s *System) sendNamedVia(f SendFunc, ctx context.Context, sender PID, node, name string, msg any) {
	if f == nil {
		s.sendNamed(ctx, sender, node, name, msg)
		return
	}
	s.viaSend(f, ctx, &OutMessage{Op: OpSend, Sender: sender, Node: node, Name: name, Msg: msg})
}

func (s *System) requestVia(f SendFunc, ctx context.Context, sender, to PID, msg any) (any, error) {
	if f == nil {
		return s.request(ctx, sender, to, msg)
	}
	return s.viaSend(f, ctx, &OutMessage{Op: OpRequest, Sender: sender, To: to, Msg: msg})
}

func (s *System) requestNamedVia(f SendFunc, ctx context.Context, sender PID, node, name string, msg any) (any, error) {
	if f == nil {
		return s.requestNamed(ctx, sender, node, name, msg)
	}
	return s.viaSend(f, ctx, &OutMessage{Op: OpRequest, Sender: sender, Node: node, Name: name, Msg: msg})
}

func (s *System) callVia(f SendFunc, ctx context.Context, sender PID, node, fn string, arg proto.Message) (proto.Message, error) {
	if f == nil {
		return s.call(ctx, sender, node, fn, arg)
	}
	v, err := s.viaSend(f, ctx, &OutMessage{Op: OpCall, Sender: sender, Node: node, Name: fn, Msg: arg})
	m, _ := v.(proto.Message)
	return m, err
}

func (s *System) castVia(f SendFunc, ctx context.Context, sender PID, node, fn string, arg proto.Message) {
	if f == nil {
		s.cast(ctx, sender, node, fn, arg)
		return
	}
	s.viaSend(f, ctx, &OutMessage{Op: OpCast, Sender: sender, Node: node, Name: fn, Msg: arg})
}
