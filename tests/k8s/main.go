// Command spinel-k8s runs a real Kubernetes control plane in one process for Spinel's tests:
// an embedded etcd, kube-apiserver and, optionally, kube-scheduler, all built from the
// Kubernetes Go modules. See README.md beside this file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

type config struct {
	dataDir         string
	port            int
	kubeconfig      string
	schedulerConfig string
	crdDirs         stringList
	apiserverArgs   stringList
	verbosity       int
	exitWithStdin   bool
	controllers     bool
	readyTimeout    time.Duration
}

func main() {
	// Node-side peers of the test tier, in the same binary so there is one Go build.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "podresources":
			os.Exit(podResourcesMain(os.Args[2:]))
		case "cni":
			os.Exit(cniMain(os.Args[2:]))
		case "kubelet":
			os.Exit(kubeletMain(os.Args[2:]))
		case "node-kubeconfig":
			os.Exit(nodeKubeconfigMain(os.Args[2:]))
		case "draplugin":
			os.Exit(draPluginMain(os.Args[2:]))
		case "slice-publisher":
			os.Exit(slicePublisherMain(os.Args[2:]))
		case "resourceclaim-controller":
			os.Exit(claimControllerMain(os.Args[2:]))
		}
	}
	var c config
	fs := flag.NewFlagSet("spinel-k8s", flag.ContinueOnError)
	fs.StringVar(&c.dataDir, "data-dir", "", "directory for etcd data, certificates and keys (required; reused on restart)")
	fs.IntVar(&c.port, "port", 0, "API server port on 127.0.0.1 (default: the port of the last run with this data dir, else a free one)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default DATA/admin.kubeconfig)")
	fs.StringVar(&c.schedulerConfig, "scheduler-config", "", "run kube-scheduler with this KubeSchedulerConfiguration file")
	fs.Var(&c.crdDirs, "crd", "apply every CRD in the YAML files of this directory and wait until Established (repeatable)")
	fs.Var(&c.apiserverArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --apiserver-arg=--feature-gates=X=true (repeatable)")
	fs.BoolVar(&c.controllers, "controller-manager", false, "also run kube-controller-manager (DaemonSets, Deployments, ServiceAccounts, node lifecycle, garbage collection)")
	fs.IntVar(&c.verbosity, "v", 0, "log verbosity of the Kubernetes components (klog -v); 0 logs errors only")
	fs.BoolVar(&c.exitWithStdin, "exit-with-stdin", false, "shut down when standard input reaches end of file (the parent died)")
	fs.DurationVar(&c.readyTimeout, "ready-timeout", 3*time.Minute, "give up when not ready within this time")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if c.dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s --data-dir DIR [--port N] [--kubeconfig PATH] [--crd DIR]... [--scheduler-config FILE] [--controller-manager] [--v N]")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "spinel-k8s: %v\n", err)
		klog.Flush()
		os.Exit(1)
	}
}

func setupLogging(verbosity int) {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	settings := map[string]string{"v": strconv.Itoa(verbosity)}
	if verbosity == 0 {
		// Quiet by default: errors only. Level 0 alone brings hundreds of info lines per start,
		// and warnings are mostly the storage layer's gRPC dialling chatter.
		settings["logtostderr"] = "false"
		settings["alsologtostderr"] = "false"
		settings["stderrthreshold"] = "ERROR"
		settings["log_file"] = os.DevNull
	}
	for k, v := range settings {
		if err := flags.Set(k, v); err != nil {
			panic(err) // names of klog's own flags
		}
	}
}

// state is what a run leaves in the data dir for the next one with the same data dir.
type state struct {
	APIServerPort  int `json:"apiserverPort"`
	EtcdClientPort int `json:"etcdClientPort"`
	EtcdPeerPort   int `json:"etcdPeerPort"`
}

func run(c config) error {
	setupLogging(c.verbosity)
	dataDir, err := filepath.Abs(c.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	kubeconfigPath := c.kubeconfig
	if kubeconfigPath == "" {
		kubeconfigPath = filepath.Join(dataDir, "admin.kubeconfig")
	}
	if kubeconfigPath, err = filepath.Abs(kubeconfigPath); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if c.exitWithStdin {
		ctx = stopAtStdinEOF(ctx)
	}

	statePath := filepath.Join(dataDir, "harness.json")
	var st state
	if data, err := os.ReadFile(statePath); err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return fmt.Errorf("%s: %w", statePath, err)
		}
	}
	// Reuse last run's ports where they are free: clients keep their URLs, and etcd keeps the
	// peer URL recorded in its membership.
	if c.port != 0 {
		st.APIServerPort = c.port
	} else if st.APIServerPort, err = portOrFree(st.APIServerPort); err != nil {
		return err
	}
	if st.EtcdClientPort, err = portOrFree(st.EtcdClientPort); err != nil {
		return err
	}
	if st.EtcdPeerPort, err = portOrFree(st.EtcdPeerPort); err != nil {
		return err
	}
	if data, err := json.Marshal(st); err != nil {
		return err
	} else if err := writeAtomic(statePath, data, 0o600); err != nil {
		return err
	}

	p := pki{dir: filepath.Join(dataDir, "pki")}
	if err := p.ensure(); err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", st.APIServerPort)
	if err := writeKubeconfig(kubeconfigPath, server, p); err != nil {
		return err
	}

	etcd, err := startEtcd(filepath.Join(dataDir, "etcd"), st.EtcdClientPort, st.EtcdPeerPort, c.verbosity)
	if err != nil {
		return err
	}
	defer etcd.stop()

	serverCtx, stopServer := context.WithCancel(context.Background())
	defer stopServer()
	apiserverDone := make(chan error, 1)
	go func() {
		etcdURL := fmt.Sprintf("http://127.0.0.1:%d", st.EtcdClientPort)
		apiserverDone <- runAPIServer(serverCtx, apiserverArgs(p, etcdURL, st.APIServerPort, c.apiserverArgs))
	}()

	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return fmt.Errorf("load %s: %w", kubeconfigPath, err)
	}
	readyCtx, cancelReady := context.WithTimeout(ctx, c.readyTimeout)
	defer cancelReady()
	if err := waitReady(readyCtx, admin, apiserverDone); err != nil {
		return err
	}
	if err := applyCRDs(readyCtx, admin, c.crdDirs); err != nil {
		return err
	}
	var schedulerDone <-chan error
	if c.schedulerConfig != "" {
		path, err := schedulerConfig(c.schedulerConfig, dataDir, kubeconfigPath)
		if err != nil {
			return err
		}
		if schedulerDone, err = startScheduler(serverCtx, path); err != nil {
			return err
		}
	}

	var controllersDone <-chan error
	if c.controllers {
		if controllersDone, err = startControllerManager(serverCtx, p, dataDir, kubeconfigPath); err != nil {
			return err
		}
	}

	ready, err := json.Marshal(map[string]any{
		"ready": true, "server": server, "kubeconfig": kubeconfigPath, "ca": p.caCert(),
		"port": st.APIServerPort, "dataDir": dataDir, "pid": os.Getpid(),
	})
	if err != nil {
		return err
	}
	fmt.Println(string(ready))

	select {
	case <-ctx.Done():
	case err := <-apiserverDone:
		return fmt.Errorf("kube-apiserver stopped: %v", err)
	case err := <-etcd.etcd.Err():
		return fmt.Errorf("etcd stopped: %v", err)
	case err := <-schedulerDone:
		return fmt.Errorf("kube-scheduler stopped: %v", err)
	case err := <-controllersDone:
		return fmt.Errorf("kube-controller-manager stopped: %v", err)
	}
	klog.Info("spinel-k8s: shutting down")
	stopServer()
	select {
	case err := <-apiserverDone:
		if err != nil {
			return fmt.Errorf("kube-apiserver shutdown: %w", err)
		}
	case <-time.After(60 * time.Second):
		return errors.New("kube-apiserver did not shut down within 60s")
	}
	if schedulerDone != nil {
		<-schedulerDone
	}
	if controllersDone != nil {
		<-controllersDone
	}
	return nil
}

// stopAtStdinEOF returns a context that ends when standard input is closed, as it is when
// the parent that holds its other end exits, however it exits.
func stopAtStdinEOF(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx
}

// portOrFree returns port when it can be bound on 127.0.0.1, else a free port.
func portOrFree(port int) (int, error) {
	if port != 0 {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeKubeconfig writes a self-contained admin kubeconfig (CA and client key embedded).
func writeKubeconfig(path, server string, p pki) error {
	ca, err := os.ReadFile(p.caCert())
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(p.adminCert())
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.adminKey())
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["spinel-k8s"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["spinel-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["spinel-k8s"] = &clientcmdapi.Context{Cluster: "spinel-k8s", AuthInfo: "spinel-admin"}
	cfg.CurrentContext = "spinel-k8s"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeAtomic(path, data, 0o600)
}

// waitReady waits until /readyz answers "ok" and the system namespaces exist.
func waitReady(ctx context.Context, admin *rest.Config, apiserverDone <-chan error) error {
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-apiserverDone:
			return false, fmt.Errorf("kube-apiserver failed: %v", err)
		default:
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || string(body) != "ok" {
			last = fmt.Sprintf("/readyz: %v %s", err, body)
			return false, nil
		}
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
			if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				last = fmt.Sprintf("namespace %s: %v", ns, err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("API server not ready (last: %s): %w", last, err)
	}
	return nil
}
