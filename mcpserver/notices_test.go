package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
)

// A client that stops reading holds up only its own completion notices:
// another session of the same owner still hears of its jobs' end.
func TestAStalledSessionHoldsUpOnlyItsOwnNotices(t *testing.T) {
	ctx := context.Background()
	ex, err := host.BuiltinExecutor("bash-local")
	if err != nil {
		t.Fatal(err)
	}
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: host.Options{Executor: ex}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	server := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	tools, err := mcpserver.New(ctx, r, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools.Register(server)

	// The stalled client: it initializes, asks for log messages, then
	// reads nothing more. It connects first, so its session comes first.
	stalledEnd, serverEnd := mcp.NewInMemoryTransports()
	stalledSS, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := stalledEnd.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	request := func(id float64, method string, params any) {
		t.Helper()
		rid, _ := jsonrpc.MakeID(id)
		raw, err := jsonMarshal(params)
		if err != nil {
			t.Fatal(err)
		}
		if err := stalled.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: raw}); err != nil {
			t.Fatal(err)
		}
		if _, err := stalled.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	request(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "stalled", "version": "0"}})
	if err := stalled.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	request(2, "logging/setLevel", map[string]any{"level": "info"})

	stop := tools.SendNotices(ctx, server)
	logged := make(chan *mcp.LoggingMessageParams, 4)
	clientEnd, serverEnd2 := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd2, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logged <- req.Params },
	}).Connect(ctx, clientEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true", "run_in_background": true}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-logged:
		case <-time.After(10 * time.Second):
			t.Fatalf("notice %d never reached the reading client while another session stalled", i+1)
		}
	}
	// Teardown: the stalled client goes (its session's blocked write
	// fails), the sessions close, then the senders stop.
	_ = stalled.Close()
	_ = stalledSS.Close()
	_ = cs.Close()
	_ = ss.Close()
	stop()
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
