package bridge

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// typeResolver finds the message type of an arriving payload: protoactor's
// own messages (Watch, Terminated, PoisonPill, ...) from a registry the
// bridge builds, user messages from Config.Types.
type typeResolver struct {
	internal *protoregistry.Types
	user     protoregistry.MessageTypeResolver
}

func newTypeResolver(user protoregistry.MessageTypeResolver) *typeResolver {
	r := &typeResolver{internal: new(protoregistry.Types), user: user}
	msgs := actor.File_actor_proto.Messages()
	for i := range msgs.Len() {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(msgs.Get(i).FullName())
		if err == nil {
			_ = r.internal.RegisterMessage(mt)
		}
	}
	return r
}

// errUnregistered and errUndecodable are the two ways a payload is refused.
var (
	errUnregistered = errors.New("unregistered message type")
	errUndecodable  = errors.New("undecodable payload")
)

// decode rebuilds a payload. A system message resolves among protoactor's
// own types only.
func (r *typeResolver) decode(name string, b []byte, system bool) (proto.Message, error) {
	full := protoreflect.FullName(name)
	mt, err := r.internal.FindMessageByName(full)
	if err != nil && !system {
		mt, err = r.user.FindMessageByName(full)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %q", errUnregistered, name)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w of type %q: %v", errUndecodable, name, err)
	}
	return m, nil
}

// encode marshals a payload: its full type name and its bytes.
func encode(msg any) (string, []byte, error) {
	pm, ok := msg.(proto.Message)
	if !ok {
		return "", nil, fmt.Errorf("%T is not a proto.Message; only protobuf messages cross nodes", msg)
	}
	b, err := proto.Marshal(pm)
	if err != nil {
		return "", nil, fmt.Errorf("marshal %s: %v", pm.ProtoReflect().Descriptor().FullName(), err)
	}
	return string(pm.ProtoReflect().Descriptor().FullName()), b, nil
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
