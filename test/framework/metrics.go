package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// MetricsPortName is the name of a member container's port that serves etcd's metrics.
const MetricsPortName = "metrics"

const (
	// getTimeout bounds one GET of a metrics endpoint.
	getTimeout = 10 * time.Second
	// maxMetricsBody is the most of a metrics answer that is read: etcd's metrics with
	// --metrics=extensive are a few hundred KiB.
	maxMetricsBody = 16 << 20
)

// newTransport is how the harness GETs metrics in a pod. The operator's metrics endpoint
// serves a self-signed certificate (controller-runtime's, made at start), so it is not
// verified: what the test proves is that the operator answers an authorized caller with
// the cluster's series, not who signed its certificate. The token it sends is the test's
// own, which may read /metrics and nothing more it does not already have. No proxy: both
// endpoints are inside the cluster.
func newTransport() http.RoundTripper {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: getTimeout,
		DisableKeepAlives:   true,
	}
}

// tokenOf returns the bearer token of cfg's identity: in a pod, its ServiceAccount's token,
// read again each time (the kubelet rotates it).
func tokenOf(cfg *rest.Config) func() (string, error) {
	return func() (string, error) {
		if cfg.BearerTokenFile != "" {
			raw, err := os.ReadFile(cfg.BearerTokenFile)
			if err != nil {
				return "", fmt.Errorf("reading the ServiceAccount token: %w", err)
			}
			return strings.TrimSpace(string(raw)), nil
		}
		if cfg.BearerToken == "" {
			return "", errors.New("the API server configuration has no bearer token to send (run the test in a pod)")
		}
		return cfg.BearerToken, nil
	}
}

// StatusError is a GET answered with a status other than 200 OK.
type StatusError struct {
	URL  string
	Code int
	// Body is the start of the answer, for the log.
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("GET %s: %d %s", e.URL, e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Refused says whether the endpoint refused the caller: 401 (no valid token) or 403 (the
// token's identity may not get /metrics).
func (e *StatusError) Refused() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden
}

// GetMetrics GETs url, a metrics endpoint in the text format, and returns the body of a 200
// answer; any other status is a *StatusError. withToken sends the test's bearer token.
func (e *Env) GetMetrics(ctx context.Context, url string, withToken bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if withToken {
		if e.Token == nil {
			return "", errors.New("no bearer token to send")
		}
		token, err := e.Token()
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	tr := e.HTTP
	if tr == nil {
		tr = newTransport()
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }() // the body was read, or the answer is an error anyway
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody))
	if resp.StatusCode != http.StatusOK {
		return "", &StatusError{URL: url, Code: resp.StatusCode, Body: firstLine(string(body), 200)}
	}
	if err != nil {
		return "", fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	return string(body), nil
}

func firstLine(s string, limit int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}

// MemberMetricsURL is the metrics endpoint of a member pod: http://<pod IP>:<port named
// metrics>/metrics. Only the pod's own IP is used, as the pod reports it.
func MemberMetricsURL(pod *corev1.Pod) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == MetricsPortName {
				return fmt.Sprintf("http://%s/metrics", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(p.ContainerPort)))), nil
			}
		}
	}
	return "", fmt.Errorf("pod %s has no container port named %s", pod.Name, MetricsPortName)
}

// MemberPods returns the member pods of c that exist, found through the cluster's selector,
// sorted by name.
func (e *Env) MemberPods(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]corev1.Pod, error) {
	pods, err := e.listMemberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// OperatorMetricsURL finds the operator's metrics Service (OperatorService) and returns
// https://<name>.<namespace>.svc:<port>/metrics with the live Service's port named portName.
func (e *Env) OperatorMetricsURL(ctx context.Context, svc *corev1.Service, portName string) (string, error) {
	s, err := e.OperatorService(ctx, svc)
	if err != nil {
		return "", err
	}
	for _, p := range s.Spec.Ports {
		if p.Name == portName {
			return fmt.Sprintf("https://%s.%s.svc:%d/metrics", s.Name, s.Namespace, p.Port), nil
		}
	}
	return "", fmt.Errorf("the Service %s/%s has no port named %s", s.Namespace, s.Name, portName)
}

// OperatorService finds the operator's metrics Service, the one the bundle ships as svc, in
// whatever namespace the operator was installed: the Service of svc's name carrying svc's
// labels, in any namespace. Several such Services (two operators installed) are an error:
// the test cannot tell which one manages its clusters.
func (e *Env) OperatorService(ctx context.Context, svc *corev1.Service) (*corev1.Service, error) {
	var list corev1.ServiceList
	if err := e.Client.List(ctx, &list, client.MatchingLabels(svc.Labels)); err != nil {
		return nil, fmt.Errorf("listing the Services labelled %s in every namespace: %w", labelString(svc.Labels), err)
	}
	var found []corev1.Service
	for _, s := range list.Items {
		if s.Name == svc.Name {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no Service %s labelled %s in any namespace: is the operator installed?", svc.Name, labelString(svc.Labels))
	case 1:
		return &found[0], nil
	default:
		var nss []string
		for _, s := range found {
			nss = append(nss, s.Namespace)
		}
		return nil, fmt.Errorf("the Service %s is in several namespaces (%s): more than one operator is installed", svc.Name, strings.Join(nss, ", "))
	}
}

func labelString(labels map[string]string) string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Sample is one sample of the Prometheus text format: a series and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseSamples reads the samples of a metrics answer in the Prometheus text format.
// Comments, blank lines and lines it cannot read are skipped.
func ParseSamples(text string) []Sample {
	var out []Sample
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	return out
}

// parseSample reads name{label="value",...} value [timestamp].
func parseSample(line string) (Sample, bool) {
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return Sample{}, false
	}
	s := Sample{Name: line[:end], Labels: map[string]string{}}
	rest := line[end:]
	if rest[0] == '{' {
		var ok bool
		if rest, ok = parseLabels(rest[1:], s.Labels); !ok {
			return Sample{}, false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return Sample{}, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Sample{}, false
	}
	s.Value = v
	return s, true
}

// parseLabels reads label="value" pairs up to the closing brace into labels and returns
// what follows the brace.
func parseLabels(s string, labels map[string]string) (string, bool) {
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return s[1:], true
		}
		eq := strings.Index(s, "=")
		if eq <= 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return "", false
		}
		name := strings.TrimSpace(s[:eq])
		var value strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(s[i])
		}
		if i == len(s) {
			return "", false
		}
		labels[name] = value.String()
		s = s[i+1:]
	}
}

// Select returns the samples named name (of any name when name is empty) whose labels
// include every label of want.
func Select(samples []Sample, name string, want map[string]string) []Sample {
	var out []Sample
	for _, s := range samples {
		if (name == "" || s.Name == name) && hasLabels(s.Labels, want) {
			out = append(out, s)
		}
	}
	return out
}

// hasLabels says whether labels include every label of want, with its value (a label
// wanted empty matches a label that is absent, as in PromQL).
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}
