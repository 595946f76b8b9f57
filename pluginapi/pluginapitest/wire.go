package pluginapitest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Serve puts impl behind a real gRPC server on a Unix socket and returns a
// client for it, the same adapters a plugin and its host use. Everything is
// torn down when the test ends: the client's Close, then the server.
func Serve(t testing.TB, impl pluginapi.ShellExecutor) pluginapi.ShellExecutor {
	t.Helper()
	// A short directory: Unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "pat")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	life, stopLife := context.WithCancel(context.Background())
	if err := (&pluginapi.ShellPlugin{Impl: impl, Life: life}).GRPCServer(nil, srv); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	connLife, stopConn := context.WithCancel(context.Background())
	client := pluginapi.NewClient(connLife, conn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Close(ctx); err != nil {
			t.Errorf("Close over the wire: %v", err)
		}
		stopConn()
		_ = conn.Close()
		srv.Stop()
		<-served
		stopLife()
		_ = os.RemoveAll(dir)
	})
	return client
}
