package main

// The real kubelet (k8s.io/kubernetes/cmd/kubelet), as `spinel-k8s kubelet <kubelet flags>`:
// the same release as the control plane, in the same Go build. The harness starts it inside a
// simulated node's network and mount namespaces; nothing here changes what the kubelet does.

import (
	"context"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // the kubelet's JSON log format, as its main registers it
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // its client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // its version metric
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
)

// kubeletMain runs the kubelet with args as its command line and returns its exit code.
func kubeletMain(args []string) int {
	cmd := kubeletapp.NewKubeletCommand(context.Background())
	cmd.SetArgs(args)
	return cli.Run(cmd)
}
