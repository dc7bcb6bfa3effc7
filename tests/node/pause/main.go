// Command pause is the pod sandbox's process, as Kubernetes' own pause: it holds the pod's
// namespaces, reaps the orphans it inherits as the pod's init, and exits 0 on SIGINT or
// SIGTERM. Built static (CGO_ENABLED=0) for an image with nothing else in it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
