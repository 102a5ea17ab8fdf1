package bridgenode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/panode"
)

// RunReceiver runs the receiver role until the controller says quit.
func RunReceiver(cfg nodeapi.Config) error {
	b, err := start(nodeapi.ReceiverNode, nodeapi.SenderNode, nil)
	if err != nil {
		return err
	}
	return panode.ServeReceiver(cfg, b)
}

// RunSender runs the sender role until the controller says quit. The
// bridge's session with the receiver is opened before the node says it
// is ready, as the mailroom sender connects its link first.
func RunSender(cfg nodeapi.Config) error {
	b, err := start(nodeapi.SenderNode, nodeapi.ReceiverNode, []string{nodeapi.ReceiverNode + "=" + cfg.Peer})
	if err != nil {
		return err
	}
	if err := connect(b); err != nil {
		return errors.Join(err, b.Stop())
	}
	return panode.ServeSender(cfg, b)
}

// connect opens the sender's bridge session with the receiver (a hello
// answered by its current incarnation, then watched).
func connect(b *node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.n.Bridge.Connect(ctx, b.peer); err != nil {
		return fmt.Errorf("bridgenode: connect to the receiver: %w", err)
	}
	return nil
}
