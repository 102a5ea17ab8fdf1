package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/mailroom-go/mailroom/bench/internal/bridgenode"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/lean"
	"github.com/mailroom-go/mailroom/bench/internal/mrnode"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/panode"
	"github.com/mailroom-go/mailroom/bench/internal/rawtcp"
)

// runRole runs this process as the child role named in its environment,
// and reports whether it was one.
func runRole() (bool, error) {
	role := os.Getenv(ctl.EnvRole)
	if role == "" {
		return false, nil
	}
	raw := []byte(os.Getenv(ctl.EnvConfig))
	node := func(run func(nodeapi.Config) error) error {
		var cfg nodeapi.Config
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("%s: bad config: %w", role, err)
		}
		return run(cfg)
	}
	switch role {
	case nodeapi.RoleMailroomReceiver:
		return true, node(mrnode.RunReceiver)
	case nodeapi.RoleMailroomSender:
		return true, node(mrnode.RunSender)
	case nodeapi.RoleProtoactorReceiver:
		return true, node(panode.RunReceiver)
	case nodeapi.RoleProtoactorSender:
		return true, node(panode.RunSender)
	case nodeapi.RoleBridgeReceiver:
		return true, node(bridgenode.RunReceiver)
	case nodeapi.RoleBridgeSender:
		return true, node(bridgenode.RunSender)
	case nodeapi.RoleLeanReceiver:
		return true, node(lean.RunReceiver)
	case nodeapi.RoleLeanSender:
		return true, node(lean.RunSender)
	case nodeapi.RoleRawReceiver, nodeapi.RoleRawSender, nodeapi.RoleRawEcho, nodeapi.RoleRawPing:
		var cfg nodeapi.RawConfig
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return true, fmt.Errorf("%s: bad config: %w", role, err)
		}
		switch role {
		case nodeapi.RoleRawReceiver:
			return true, rawtcp.RunReceiver(cfg)
		case nodeapi.RoleRawSender:
			return true, rawtcp.RunSender(cfg)
		case nodeapi.RoleRawEcho:
			return true, rawtcp.RunEcho(cfg)
		}
		return true, rawtcp.RunPing(cfg)
	}
	return true, fmt.Errorf("unknown role %q", role)
}
