package main

// kube-controller-manager (k8s.io/kubernetes/cmd/kube-controller-manager), run in the harness's
// process on request (--controller-manager): what a cluster with nodes needs beside the API
// server and the scheduler. The DaemonSet and Deployment controllers create the pods of
// Spinel's workloads, the ServiceAccount and root-CA publishers give every namespace its
// `default` ServiceAccount and `kube-root-ca.crt` (a projected token volume needs both), the
// node lifecycle controller lifts the not-ready taint of a Ready node, the garbage collector
// removes what an owner leaves.

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// startControllerManager configures kube-controller-manager from flags as its command line
// would (leader election off, no HTTPS port of its own) and runs it until ctx is cancelled.
func startControllerManager(ctx context.Context, p pki, dataDir, kubeconfig string) (<-chan error, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--root-ca-file=" + p.caCert(),
		"--service-account-private-key-file=" + p.saKey(),
		// The nodes' pod CIDRs come from their CNI configuration, not from the controller.
		"--allocate-node-cidrs=false",
		"--cluster-name=spinel-k8s",
		// Its default, /usr/libexec/kubernetes/..., would be created on the machine.
		"--flex-volume-plugin-dir=" + filepath.Join(dataDir, "flexvolume"),
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager configuration: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		err := kcmapp.Run(ctx, c.Complete())
		if ctx.Err() != nil {
			err = nil
		}
		done <- err
	}()
	return done, nil
}
