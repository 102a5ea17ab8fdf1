// Package clusterpb holds the messages package cluster sends between nodes
// for topics (generated from cluster.proto with protoc-gen-go v1.36.12:
// protoc -I . --go_out=. --go_opt=paths=source_relative
// internal/clusterpb/cluster.proto). Not API: users call
// cluster.Cluster.Publish.
package clusterpb
