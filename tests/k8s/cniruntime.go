package main

// A CNI runtime for tests that calls plugins exactly as containerd's CRI plugin does: through
// containerd's own go-cni (which wraps libcni), with the labels and capabilities containerd
// builds for a pod sandbox (internal/cri/server: toCNILabels, cniNamespaceOpts), interface
// names from the prefix "eth", the loopback network first. CHECK and GC go through libcni
// directly to the default network (containerd sends neither; the spec has both).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	gocni "github.com/containerd/go-cni"
	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
)

type cniCall struct {
	confDir, binDir, netns, id                 string
	podNamespace, podName, podUID, annotations string
	keep                                       string
}

// cniMain: spinel-k8s cni [flags] add|check|del|status|gc. ADD prints {"results":[...]} (the
// raw results of every network, in order); failures print the plugin's error on stderr and
// exit 1.
func cniMain(args []string) int {
	var c cniCall
	fs := flag.NewFlagSet("spinel-k8s cni", flag.ContinueOnError)
	fs.StringVar(&c.confDir, "conf-dir", "", "CNI configuration directory (containerd: /etc/cni/net.d)")
	fs.StringVar(&c.binDir, "bin-dir", "", "CNI plugin directory (containerd: /opt/cni/bin)")
	fs.StringVar(&c.netns, "netns", "", "the sandbox's network namespace path")
	fs.StringVar(&c.id, "id", "", "the sandbox (container) ID")
	fs.StringVar(&c.podNamespace, "pod-namespace", "", "the pod's namespace")
	fs.StringVar(&c.podName, "pod-name", "", "the pod's name")
	fs.StringVar(&c.podUID, "pod-uid", "", "the pod's UID")
	fs.StringVar(&c.annotations, "annotations", "", "JSON object of the pod's annotations (capability io.kubernetes.cri.pod-annotations)")
	fs.StringVar(&c.keep, "keep", "", "gc: comma-separated containerID/ifname attachments to keep")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s cni --conf-dir D --bin-dir B [--netns P --id ID --pod-namespace NS --pod-name N --pod-uid U --annotations JSON] add|check|del|status|gc")
		return 2
	}
	var err error
	switch verb := fs.Arg(0); verb {
	case "gc":
		err = c.gc()
	case "check":
		err = c.check()
	default:
		err = c.run(verb)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func (c cniCall) run(verb string) error {
	plugin, err := gocni.New(
		gocni.WithPluginConfDir(c.confDir),
		gocni.WithPluginDir([]string{c.binDir}),
		gocni.WithInterfacePrefix("eth"),
		gocni.WithMinNetworkCount(1),
	)
	if err != nil {
		return err
	}
	if err := plugin.Load(gocni.WithLoNetwork, gocni.WithDefaultConf); err != nil {
		return err
	}
	ctx := context.Background()
	if verb == "status" {
		return plugin.Status()
	}
	opts, err := c.namespaceOpts()
	if err != nil {
		return err
	}
	switch verb {
	case "add":
		result, err := plugin.Setup(ctx, c.id, c.netns, opts...)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"results": result.Raw()})
	case "del":
		return plugin.Remove(ctx, c.id, c.netns, opts...)
	}
	return fmt.Errorf("unknown verb %q", verb)
}

// namespaceOpts are containerd's for a pod sandbox: the K8S_POD_* labels with IgnoreUnknown,
// and the pod's annotations as a capability.
func (c cniCall) namespaceOpts() ([]gocni.NamespaceOpts, error) {
	labels := map[string]string{
		"K8S_POD_NAMESPACE":          c.podNamespace,
		"K8S_POD_NAME":               c.podName,
		"K8S_POD_INFRA_CONTAINER_ID": c.id,
		"K8S_POD_UID":                c.podUID,
		"IgnoreUnknown":              "1",
	}
	annotations := map[string]string{}
	if c.annotations != "" {
		if err := json.Unmarshal([]byte(c.annotations), &annotations); err != nil {
			return nil, fmt.Errorf("--annotations: %w", err)
		}
	}
	return []gocni.NamespaceOpts{
		gocni.WithLabels(labels),
		gocni.WithCapability("io.kubernetes.cri.pod-annotations", annotations),
	}, nil
}

// defaultList is the first network configuration in the directory, as go-cni's
// WithDefaultConf picks it, as a list.
func (c cniCall) defaultList() (*libcni.NetworkConfigList, error) {
	files, err := libcni.ConfFiles(c.confDir, []string{".conf", ".conflist", ".json"})
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CNI configuration in %s: %v", c.confDir, err)
	}
	if strings.HasSuffix(files[0], ".conflist") {
		return libcni.ConfListFromFile(files[0])
	}
	conf, err := libcni.ConfFromFile(files[0])
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromConf(conf)
}

// check sends CHECK to the default network only: go-cni's Check would also send it to the
// loopback network, whose version (0.3.1) has no CHECK, and containerd itself never checks.
// The result cached at ADD is read from libcni's default cache, where go-cni put it.
func (c cniCall) check() error {
	list, err := c.defaultList()
	if err != nil {
		return err
	}
	annotations := map[string]string{}
	if c.annotations != "" {
		if err := json.Unmarshal([]byte(c.annotations), &annotations); err != nil {
			return fmt.Errorf("--annotations: %w", err)
		}
	}
	rt := &libcni.RuntimeConf{
		ContainerID: c.id,
		NetNS:       c.netns,
		IfName:      "eth0",
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", c.podNamespace},
			{"K8S_POD_NAME", c.podName},
			{"K8S_POD_INFRA_CONTAINER_ID", c.id},
			{"K8S_POD_UID", c.podUID},
		},
		CapabilityArgs: map[string]interface{}{"io.kubernetes.cri.pod-annotations": annotations},
	}
	runtime := libcni.NewCNIConfig([]string{c.binDir}, nil)
	return runtime.CheckNetworkList(context.Background(), list, rt)
}

// gc sends GC with the attachments to keep to the default network, as a runtime would.
func (c cniCall) gc() error {
	list, err := c.defaultList()
	if err != nil {
		return err
	}
	var keep []cnitypes.GCAttachment
	for _, a := range strings.Split(c.keep, ",") {
		if id, ifname, ok := strings.Cut(a, "/"); ok {
			keep = append(keep, cnitypes.GCAttachment{ContainerID: id, IfName: ifname})
		}
	}
	runtime := libcni.NewCNIConfig([]string{c.binDir}, nil)
	return runtime.GCNetworkList(context.Background(), list, &libcni.GCArgs{ValidAttachments: keep})
}
