package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

const (
	// serviceIssuer is the `iss` of ServiceAccount tokens and the default audience.
	serviceIssuer = "https://kubernetes.default.svc.cluster.local"
	// serviceCIDR is the Service ClusterIP range; its first address is the `kubernetes` Service.
	serviceCIDR = "10.96.0.0/12"
)

var serviceIP = net.IPv4(10, 96, 0, 1)

// apiserverArgs are the kube-apiserver flags of a small but real cluster: TLS with our CA,
// client certificates and ServiceAccount tokens for authentication, Node and RBAC
// authorization, the default admission chain (which includes ValidatingAdmissionPolicy)
// plus NodeRestriction, and a token issuer so that TokenRequest works.
func apiserverArgs(p pki, etcdURL string, port int, extra []string) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p.servingCert(),
		"--tls-private-key-file=" + p.servingKey(),
		"--client-ca-file=" + p.caCert(),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy",
		"--service-account-issuer=" + serviceIssuer,
		"--service-account-key-file=" + p.saPub(),
		"--service-account-signing-key-file=" + p.saKey(),
		"--api-audiences=" + serviceIssuer,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		// The lease reconciler would publish 127.0.0.1 as the `kubernetes` Service's
		// endpoint, which endpoint validation refuses (loopback); nothing here needs it.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	return append(args, extra...)
}

// runAPIServer configures kube-apiserver from args exactly as its command line would and
// serves until ctx is cancelled. It returns once the server has shut down.
func runAPIServer(ctx context.Context, args []string) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags %s: %w", strings.Join(args, " "), err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	// The server's clients of itself must not log the warnings it sends them.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	return app.Run(ctx, completed)
}
