package main

// The kubelet's side of a DRA driver's kubelet plugin, from the kubelet's own code: its plugin
// manager (k8s.io/kubernetes/pkg/kubelet/pluginmanager) watches a plugins_registry directory,
// finds the driver's registration socket, calls GetInfo and NotifyRegistrationStatus, and hands
// the plugin to the kubelet's DRA plugin manager (pkg/kubelet/cm/dra/plugin), which validates
// the advertised services, connects to the plugin's endpoint and calls NodePrepareResources or
// NodeUnprepareResources exactly as the kubelet does for a pod's claims. Only the pod is the
// test's: the claims to prepare come from the command line.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
)

// draPluginMain: spinel-k8s draplugin --registry DIR --driver NAME --claim NS/NAME/UID...
// prepare|unprepare. Prints the plugin's response (protojson) on stdout; exits 1 when the
// plugin does not register or the call fails, naming why.
func draPluginMain(args []string) int {
	fs := flag.NewFlagSet("spinel-k8s draplugin", flag.ContinueOnError)
	registry := fs.String("registry", "", "the kubelet's plugin registration directory (/var/lib/kubelet/plugins_registry)")
	driver := fs.String("driver", "", "the DRA driver's name")
	timeout := fs.Duration("timeout", 30*time.Second, "how long registration and the call may take")
	var claims stringList
	fs.Var(&claims, "claim", "NAMESPACE/NAME/UID of a claim (repeatable)")
	if err := fs.Parse(args); err != nil || *registry == "" || *driver == "" || len(claims) == 0 || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s draplugin --registry DIR --driver NAME --claim NS/NAME/UID... prepare|unprepare")
		return 2
	}
	var pbClaims []*drapbv1.Claim
	for _, c := range claims {
		parts := strings.Split(c, "/")
		if len(parts) != 3 {
			fmt.Fprintf(os.Stderr, "draplugin: --claim %q is not NAMESPACE/NAME/UID\n", c)
			return 2
		}
		pbClaims = append(pbClaims, &drapbv1.Claim{Namespace: parts[0], Name: parts[1], Uid: parts[2]})
	}
	setupLogging(0)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out, err := callDRAPlugin(ctx, *registry, *driver, fs.Arg(0), pbClaims)
	if err != nil {
		fmt.Fprintf(os.Stderr, "draplugin: %v\n", err)
		return 1
	}
	fmt.Println(out)
	return 0
}

func callDRAPlugin(ctx context.Context, registry, driver, verb string, claims []*drapbv1.Claim) (string, error) {
	// No API client: the kubelet's manager would wipe the node's ResourceSlices at start.
	dra := draplugin.NewDRAPluginManager(ctx, nil, nil, nil, 0)
	defer dra.Stop()
	manager := pluginmanager.NewPluginManager(registry, record.NewFakeRecorder(100))
	manager.AddHandler(pluginwatcherapi.DRAPlugin, dra)
	stop := make(chan struct{})
	defer close(stop)
	ready := kubeletconfig.NewSourcesReady(func(sets.Set[string]) bool { return true })
	go manager.Run(ctx, ready, stop)

	var plugin *draplugin.DRAPlugin
	for plugin == nil {
		p, err := dra.GetPlugin(driver)
		if err == nil {
			plugin = p
			break
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the driver never registered through %s: %v", registry, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for {
		var resp proto.Message
		var err error
		switch verb {
		case "prepare":
			var r *drapbv1.NodePrepareResourcesResponse
			r, err = plugin.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claims})
			resp = r
		case "unprepare":
			var r *drapbv1.NodeUnprepareResourcesResponse
			r, err = plugin.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claims})
			resp = r
		default:
			return "", fmt.Errorf("unknown verb %q (prepare or unprepare)", verb)
		}
		if err == nil {
			data, err := protojson.Marshal(resp)
			return string(data), err
		}
		// The connection may still be coming up right after registration.
		if ctx.Err() != nil {
			return "", errors.Join(err, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
