package main

// The peer of the agent's slice publisher in benchmarks: Kubernetes' own ResourceSlice
// controller (k8s.io/dynamic-resource-allocation/resourceslice, the one every Go DRA driver's
// kubelet plugin helper runs), publishing a given node's pool. It prints {"ready":true} when
// its devices and client are ready, just before starting the controller (so a benchmark can
// tell this binary's start-up from the publication), and runs until stdin closes or a signal.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// slicePublisherMain: spinel-k8s slice-publisher --kubeconfig PATH --driver NAME --node NODE
// --devices FILE (a JSON array of slices, each a JSON array of resource.k8s.io/v1 Devices).
func slicePublisherMain(args []string) int {
	fs := flag.NewFlagSet("spinel-k8s slice-publisher", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	driver := fs.String("driver", "", "the DRA driver's name")
	node := fs.String("node", "", "the node whose pool is published (and the slices' owner)")
	devices := fs.String("devices", "", "JSON file: [[device, ...], ...], one array per slice")
	if err := fs.Parse(args); err != nil || *kubeconfig == "" || *driver == "" || *node == "" || *devices == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s slice-publisher --kubeconfig PATH --driver NAME --node NODE --devices FILE")
		return 2
	}
	setupLogging(0)
	raw, err := os.ReadFile(*devices)
	if err != nil {
		fmt.Fprintf(os.Stderr, "slice-publisher: %v\n", err)
		return 1
	}
	var slices [][]resourceapi.Device
	if err := json.Unmarshal(raw, &slices); err != nil || len(slices) == 0 {
		fmt.Fprintf(os.Stderr, "slice-publisher: %s is not a non-empty array of device arrays: %v\n", *devices, err)
		return 1
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "slice-publisher: %v\n", err)
		return 1
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "slice-publisher: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = stopAtStdinEOF(ctx)
	pool := resourceslice.Pool{}
	for _, devices := range slices {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: devices})
	}
	fmt.Println(`{"ready":true}`)
	controller, err := resourceslice.StartController(ctx, resourceslice.Options{
		DriverName: *driver,
		KubeClient: client,
		Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: *node},
		Resources:  &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{*node: pool}},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "slice-publisher: %v\n", err)
		return 1
	}
	defer controller.Stop()
	<-ctx.Done()
	return 0
}
