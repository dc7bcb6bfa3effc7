// Command kubectl is kubectl itself (k8s.io/kubectl's command, as k8s.io/kubernetes/cmd/kubectl
// wires it), at the version Helm's go.mod pins, for the install section's commands in tests.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
