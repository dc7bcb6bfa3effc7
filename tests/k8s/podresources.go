package main

// The kubelet's pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1), served on a unix
// socket from a file the test writes: what Multus asks to learn which device (a VF's PCI
// address) the device plugin gave a pod. The messages are the kubelet's own generated types;
// only where the allocations come from is the test's.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// podResources answers List from the allocations file, read afresh on every call so a test
// changes allocations by rewriting it (atomically).
type podResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	file string
}

func (p *podResources) read() (*podresourcesv1.ListPodResourcesResponse, error) {
	data, err := os.ReadFile(p.file)
	if errors.Is(err, os.ErrNotExist) {
		return &podresourcesv1.ListPodResourcesResponse{}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "read %s: %v", p.file, err)
	}
	var resp podresourcesv1.ListPodResourcesResponse
	if err := protojson.Unmarshal(data, &resp); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", p.file, err)
	}
	return &resp, nil
}

func (p *podResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return p.read()
}

func (p *podResources) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	all, err := p.read()
	if err != nil {
		return nil, err
	}
	for _, pod := range all.PodResources {
		if pod.Name == req.PodName && pod.Namespace == req.PodNamespace {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: pod}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.PodNamespace, req.PodName)
}

// podResourcesMain: spinel-k8s podresources --socket PATH --allocations FILE. Prints
// {"ready":true} once the socket accepts connections; exits on SIGTERM or when stdin closes.
func podResourcesMain(args []string) int {
	fs := flag.NewFlagSet("spinel-k8s podresources", flag.ContinueOnError)
	socket := fs.String("socket", "", "unix socket to serve on (the kubelet's is /var/lib/kubelet/pod-resources/kubelet.sock)")
	file := fs.String("allocations", "", "JSON of a v1 ListPodResourcesResponse (protojson), read on every call")
	exitWithStdin := fs.Bool("exit-with-stdin", false, "shut down when standard input reaches end of file")
	if err := fs.Parse(args); err != nil || *socket == "" || *file == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s podresources --socket PATH --allocations FILE [--exit-with-stdin]")
		return 2
	}
	if err := os.Remove(*socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "podresources: %v\n", err)
		return 1
	}
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podresources: %v\n", err)
		return 1
	}
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, &podResources{file: *file})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *exitWithStdin {
		ctx = stopAtStdinEOF(ctx)
	}
	go func() {
		<-ctx.Done()
		server.Stop()
	}()
	fmt.Println(`{"ready":true}`)
	if err := server.Serve(listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		fmt.Fprintf(os.Stderr, "podresources: %v\n", err)
		return 1
	}
	return 0
}
