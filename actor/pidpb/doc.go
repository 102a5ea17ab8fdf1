// Package pidpb is an actor.PID as a protobuf message, to put in your own
// messages: a request that carries the PID to reply to, a registry of
// workers, a subscription. The field travels to any node and converts
// back to the same PID there, its incarnation included, so a PID of a
// node that has since restarted still never reaches an actor of the new
// incarnation.
//
// # Usage
//
// In your .proto file:
//
//	import "actor/pidpb/pid.proto";
//
//	message Quote {
//	  mailroom.actor.PID reply_to = 1;
//	  string item = 2;
//	}
//
// compiled with mailroom's module on the include path, where go mod
// download put it:
//
//	protoc -I . -I "$(go list -m -f '{{.Dir}}' github.com/mailroom-go/mailroom)" \
//		--go_out=. --go_opt=paths=source_relative quote.proto
//
// and in Go:
//
//	c.Send(billing, &pb.Quote{ReplyTo: pidpb.From(c.Self()), Item: "lamp"})
//	...
//	q := c.Message().(*pb.Quote)
//	c.Send(q.ReplyTo.PID(), &pb.Price{Cents: 1999})
//
// The remote layer registers PID with each System it starts on, so a bare
// PID can be sent as a message too. The messages have vtprotobuf's fast
// methods. Regenerate with protoc (Debian's protobuf-compiler),
// protoc-gen-go v1.36.12 and protoc-gen-go-vtproto v0.6.0, from the
// module's root:
//
//	protoc -I . --go_out=. --go_opt=paths=source_relative \
//		--go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size \
//		actor/pidpb/pid.proto
package pidpb
