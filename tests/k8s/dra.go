package main

// Kubernetes' own ResourceClaim controller (k8s.io/kubernetes/pkg/controller/resourceclaim,
// what kube-controller-manager runs as resource-claim-controller), alone: it turns a pod's
// resourceClaimTemplateName into a ResourceClaim owned by the pod and records it in
// pod.status.resourceClaimStatuses, which kube-scheduler allocates and Multus reads. The rest
// of kube-controller-manager stays off: the node lifecycle controller would mark the tier's
// kubelet-less Nodes NotReady and evict.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
)

// claimControllerMain: spinel-k8s resourceclaim-controller --kubeconfig PATH [--exit-with-stdin].
// Prints {"ready":true} once its caches are synced; runs until SIGTERM or stdin closes.
func claimControllerMain(args []string) int {
	fs := flag.NewFlagSet("spinel-k8s resourceclaim-controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig of the cluster")
	exitWithStdin := fs.Bool("exit-with-stdin", false, "shut down when standard input reaches end of file")
	verbosity := fs.Int("v", 0, "klog verbosity")
	if err := fs.Parse(args); err != nil || *kubeconfig == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: spinel-k8s resourceclaim-controller --kubeconfig PATH [--exit-with-stdin] [--v N]")
		return 2
	}
	setupLogging(*verbosity)
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "resourceclaim-controller: %v\n", err)
		return 1
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "resourceclaim-controller: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *exitWithStdin {
		ctx = stopAtStdinEOF(ctx)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := resourceclaim.NewController(
		klog.FromContext(ctx),
		resourceclaim.Features{},
		client,
		factory.Core().V1().Pods(),
		factory.Scheduling().V1alpha2().PodGroups(),
		factory.Resource().V1().ResourceClaims(),
		factory.Resource().V1().ResourceClaimTemplates(),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "resourceclaim-controller: %v\n", err)
		return 1
	}
	factory.Start(ctx.Done())
	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			fmt.Fprintf(os.Stderr, "resourceclaim-controller: cache of %v not synced\n", informer)
			return 1
		}
	}
	fmt.Println(`{"ready":true}`)
	controller.Run(ctx, 4)
	factory.Shutdown()
	return 0
}
