// Command grpc_health_probe checks a gRPC server's health (the grpc.health.v1 Health
// service) and exits 0 only when it answers SERVING.
//
// OLM v0 runs `grpc_health_probe -addr=:50051` as the exec readiness and liveness probe of
// every catalog registry pod, so a catalog image needs this program on its PATH. The
// upstream module is not available from the Go module proxy, so this is our own minimal
// stand-in with the flags OLM and operator-sdk pass. Exit codes follow the upstream tool:
//
//	0  SERVING
//	1  bad flags
//	2  could not connect within -connect-timeout
//	3  the health RPC failed (or timed out after -rpc-timeout)
//	4  the server answered, but not SERVING
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const (
	exitServing = iota
	exitUsage
	exitConnect
	exitRPC
	exitUnhealthy
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("grpc_health_probe", flag.ContinueOnError)
	addr := fs.String("addr", "", "address of the gRPC server (host:port; \":port\" means this host)")
	service := fs.String("service", "", "service name to check (empty: the server as a whole)")
	connectTimeout := fs.Duration("connect-timeout", time.Second, "timeout for establishing the connection")
	rpcTimeout := fs.Duration("rpc-timeout", time.Second, "timeout for the health check RPC")
	userAgent := fs.String("user-agent", "grpc_health_probe", "user agent sent to the server")
	verbose := fs.Bool("v", false, "print the steps taken")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return exitUsage
	}
	if *addr == "" || fs.NArg() > 0 || *connectTimeout <= 0 || *rpcTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "usage: grpc_health_probe -addr=HOST:PORT [-service=NAME] [-connect-timeout=D] [-rpc-timeout=D]")
		return exitUsage
	}

	// passthrough: hand the address to net.Dial unchanged, so ":50051" reaches this host
	// as it does for the upstream tool (the default dns resolver rejects an empty host).
	conn, err := grpc.NewClient("passthrough:///"+*addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(*userAgent))
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: cannot create a client for %s: %v\n", *addr, err)
		return exitUsage
	}
	defer func() { _ = conn.Close() }()

	start := time.Now()
	if err := waitReady(conn, *connectTimeout); err != nil {
		fmt.Fprintf(os.Stderr, "error: cannot connect to %s within %v: %v\n", *addr, *connectTimeout, err)
		return exitConnect
	}
	if *verbose {
		fmt.Fprintf(os.Stderr, "connected to %s in %v\n", *addr, time.Since(start).Round(time.Millisecond))
	}

	ctx, cancel := context.WithTimeout(context.Background(), *rpcTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: health rpc failed: %v\n", err)
		return exitRPC
	}
	if st := resp.GetStatus(); st != healthpb.HealthCheckResponse_SERVING {
		fmt.Printf("service unhealthy (responded with %q)\n", st.String())
		return exitUnhealthy
	}
	fmt.Printf("status: %s\n", resp.GetStatus().String())
	return exitServing
}

// waitReady connects conn and waits until it is ready, failing after timeout or as soon
// as the first attempt fails (a closed port should not wait out the whole timeout).
func waitReady(conn *grpc.ClientConn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn.Connect()
	for {
		st := conn.GetState()
		switch st {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("connection state %s", st)
		}
		if !conn.WaitForStateChange(ctx, st) {
			return ctx.Err()
		}
	}
}
