package main

// `spinel-k8s node-kubeconfig`: a kubelet's own credentials, as a cluster installer gives a
// node: a client certificate for user system:node:NAME in group system:nodes, signed by the
// cluster CA, in a kubeconfig for the harness's API server. With it the Node authorizer and the
// NodeRestriction admission plugin treat the kubelet as that node and nothing more.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// nodeName is what a Node's name may be here: a DNS-1123 subdomain.
var nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func nodeKubeconfigMain(args []string) int {
	fs := flag.NewFlagSet("spinel-k8s node-kubeconfig", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "the control plane's --data-dir (its CA and harness.json)")
	node := fs.String("node", "", "the Node's name")
	out := fs.String("out", "", "where to write the kubeconfig")
	if err := fs.Parse(args); err != nil || *dataDir == "" || *node == "" || *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s node-kubeconfig --data-dir DIR --node NAME --out PATH")
		return 2
	}
	if err := writeNodeKubeconfig(*dataDir, *node, *out); err != nil {
		fmt.Fprintf(os.Stderr, "spinel-k8s node-kubeconfig: %v\n", err)
		return 1
	}
	return 0
}

func writeNodeKubeconfig(dataDir, node, out string) error {
	if len(node) > 253 || !nodeName.MatchString(node) {
		return fmt.Errorf("--node %q is not a DNS-1123 subdomain", node)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "harness.json"))
	if err != nil {
		return fmt.Errorf("the control plane has not run with this data dir: %w", err)
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil || st.APIServerPort == 0 {
		return fmt.Errorf("%s/harness.json names no API server port (%v)", dataDir, err)
	}
	p := pki{dir: filepath.Join(dataDir, "pki")}
	ca, caKey, err := p.loadOrCreateCA()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(out), ".node-cert.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certPath, keyPath := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	leaf := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.ensureLeaf(certPath, keyPath, leaf, ca, caKey); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(p.caCert())
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["spinel-k8s"] = &clientcmdapi.Cluster{
		Server: fmt.Sprintf("https://127.0.0.1:%d", st.APIServerPort), CertificateAuthorityData: caPEM}
	cfg.AuthInfos[node] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[node] = &clientcmdapi.Context{Cluster: "spinel-k8s", AuthInfo: node}
	cfg.CurrentContext = node
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeAtomic(out, data, 0o600)
}
