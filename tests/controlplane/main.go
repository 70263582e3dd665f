// Command kube is the test control plane of grove-gitops: one multi-call binary with the
// real kube-apiserver, kube-controller-manager, kube-scheduler and an embedded etcd, built
// from Kubernetes' own Go modules at one pinned release (go.mod). One binary instead of four
// because the four share almost all of their code: one compile and one link instead of four.
//
// Usage: kube {etcd|kube-apiserver|kube-controller-manager|kube-scheduler|version} [flags...]
// It is built and started by scripts/control-plane.sh; nothing of it ships in the product.
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as the real mains
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics, as the real mains
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as the real mains
	"k8s.io/component-base/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube {etcd|kube-apiserver|kube-controller-manager|kube-scheduler|version} [flags...]")
		os.Exit(2)
	}
	sub := os.Args[1]
	// Each component parses os.Args[1:] itself; drop the subcommand so it sees only its flags.
	os.Args = append([]string{sub}, os.Args[2:]...)
	switch sub {
	case "etcd":
		etcdmain.Main(os.Args)
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "version":
		fmt.Println(version.Get().GitVersion)
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n", sub)
		os.Exit(2)
	}
}
