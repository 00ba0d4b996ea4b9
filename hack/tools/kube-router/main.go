// Command kube-router is the local cluster's NetworkPolicy firewall: kube-router's network
// policy controller alone, with kube-router's own flags, started as the release's command
// starts it. That command also links BGP routing (gobgp), the IPVS service proxy and the AWS
// SDK, none of which the local cluster runs; without them a fresh machine compiles 28 MB of
// Go source for the firewall instead of 49 MB. Flags that would start a part left out are
// refused rather than ignored.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/version"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kube-router: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.HelpRequested {
		pflag.Usage()
		return nil
	}
	if config.Version {
		version.PrintVersion(false)
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("the firewall needs root to run iptables and ipset")
	}
	if config.CleanupConfig {
		// What --cleanup-config removes for the firewall: its chains and ipsets.
		(&netpol.NetworkPolicyController{}).Cleanup()
		return nil
	}
	if err := firewallOnly(config); err != nil {
		return err
	}

	client, err := newClient(config)
	if err != nil {
		return err
	}
	return runFirewall(client, config)
}

// firewallOnly refuses the settings this build cannot honour.
func firewallOnly(c *options.KubeRouterConfig) error {
	if !c.RunFirewall {
		return errors.New("this build runs only the firewall: pass --run-firewall=true")
	}
	if c.RunRouter || c.RunServiceProxy || c.RunLoadBalancer || c.EnableCNI {
		return errors.New("this build runs only the firewall: pass --run-router=false " +
			"--run-service-proxy=false --run-loadbalancer=false --enable-cni=false")
	}
	if c.MetricsPort != 0 {
		return errors.New("this build has no metrics server: pass --metrics-port=0")
	}
	return nil
}

func newClient(c *options.KubeRouterConfig) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if c.Master != "" || c.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags(c.Master, c.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// runFirewall is the firewall part of kube-router's own Run: informers, the health
// controller (which drains the controllers' heartbeats), the network policy controller;
// until SIGINT or SIGTERM.
func runFirewall(client kubernetes.Interface, config *options.KubeRouterConfig) error {
	var ipsetMutex sync.Mutex
	var wg sync.WaitGroup
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	stopCh := make(chan struct{})

	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return fmt.Errorf("health controller: %w", err)
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	synced := make(chan struct{})
	go func() { factory.WaitForCacheSync(stopCh); close(synced) }()
	select {
	case <-synced:
	case <-time.After(config.CacheSyncTimeout):
		close(stopCh)
		return fmt.Errorf("informer caches not synced after %s", config.CacheSyncTimeout)
	}

	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("iptables handlers: %w", err)
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptables, ipsets)
	if err != nil {
		return fmt.Errorf("network policy controller: %w", err)
	}
	if _, err := podInformer.AddEventHandler(npc.PodEventHandler); err != nil {
		return err
	}
	if _, err := nsInformer.AddEventHandler(npc.NamespaceEventHandler); err != nil {
		return err
	}
	if _, err := npInformer.AddEventHandler(npc.NetworkPolicyEventHandler); err != nil {
		return err
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Info("shutting down the firewall")
	close(stopCh)
	wg.Wait()
	return nil
}
