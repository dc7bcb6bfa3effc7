package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"sigs.k8s.io/yaml"
)

// schedulerConfig reads the caller's KubeSchedulerConfiguration, fills in what a test cluster
// needs and the file left out (the admin kubeconfig, leader election off), and writes the
// result to DATA/kube-scheduler.yaml, whose path it returns. Everything else (profiles,
// plugins, extenders) is the caller's and is validated by the scheduler itself.
func schedulerConfig(src, dataDir, kubeconfig string) (string, error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("read --scheduler-config: %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("--scheduler-config %s is not YAML: %w", src, err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if _, ok := cfg["apiVersion"]; !ok {
		cfg["apiVersion"] = "kubescheduler.config.k8s.io/v1"
	}
	if _, ok := cfg["kind"]; !ok {
		cfg["kind"] = "KubeSchedulerConfiguration"
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	if k, _ := conn["kubeconfig"].(string); k == "" {
		conn["kubeconfig"] = kubeconfig
	}
	cfg["clientConnection"] = conn
	election, _ := cfg["leaderElection"].(map[string]any)
	if election == nil {
		election = map[string]any{}
	}
	if _, ok := election["leaderElect"]; !ok {
		election["leaderElect"] = false
	}
	cfg["leaderElection"] = election
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, "kube-scheduler.yaml")
	return path, writeAtomic(path, out, 0o600)
}

// startScheduler sets kube-scheduler up from its configuration file as its command line would,
// without its own HTTPS endpoint (port 0: nothing to collide with other harnesses), and runs
// it until ctx is cancelled. Setup errors (a bad configuration) are returned before it runs.
func startScheduler(ctx context.Context, configPath string) (<-chan error, error) {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + configPath, "--secure-port=0"}); err != nil {
		return nil, err
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler with %s: %w", configPath, err)
	}
	done := make(chan error, 1)
	go func() {
		// Without leader election Run returns only when ctx ends (with a non-nil error).
		err := app.Run(ctx, cc, sched)
		if ctx.Err() != nil {
			err = nil
		}
		done <- err
	}()
	return done, nil
}
