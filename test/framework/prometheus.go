package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Prometheus reads a Prometheus server through its HTTP API (v1): the targets it scrapes,
// the rules it evaluates, the alerts that are pending or firing, and instant queries. It is
// how level 4 sees a cluster the way its monitoring does, rather than as the operator
// reports it.
type Prometheus struct {
	// URL is where Prometheus serves its API, such as
	// http://prometheus.etcdpilot-monitoring.svc:9090; /api/v1/... is appended.
	URL string
	// HTTP carries the GETs; http.DefaultTransport when nil.
	HTTP http.RoundTripper
}

// Prometheus returns a client of the Prometheus at url, whose GETs go through the Env's
// transport (Env.HTTP), as the metrics endpoints' do.
func (e *Env) Prometheus(url string) *Prometheus {
	return &Prometheus{URL: url, HTTP: e.HTTP}
}

// Target is one active scrape target, as /api/v1/targets lists it.
type Target struct {
	// Labels are the target's labels after relabelling: those every series scraped from
	// it carries (namespace, pod, job, etcd_cluster, ...).
	Labels map[string]string `json:"labels"`
	// ScrapePool is the scrape configuration the target belongs to; the Prometheus
	// Operator names it <kind>/<namespace>/<name>/<endpoint>, such as
	// podMonitor/ns/c-members/0.
	ScrapePool string `json:"scrapePool"`
	// ScrapeURL is the address Prometheus scrapes.
	ScrapeURL string `json:"scrapeUrl"`
	// Health is "up", "down" or "unknown" (not scraped yet).
	Health string `json:"health"`
	// LastError is why the last scrape failed, if it did.
	LastError string `json:"lastError"`
}

// RuleGroup is one group of rules Prometheus evaluates, from one rule file.
type RuleGroup struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Rules []Rule `json:"rules"`
}

// Rule is one alerting or recording rule of a group.
type Rule struct {
	// Name is the alert's name (or the recorded series' name).
	Name string `json:"name"`
	// Type is "alerting" or "recording".
	Type string `json:"type"`
	// Health is "ok", "err" (its last evaluation failed) or "unknown" (not evaluated yet).
	Health string `json:"health"`
	// LastError is why its last evaluation failed, if it did.
	LastError string `json:"lastError"`
	// State is an alerting rule's: "inactive", "pending" or "firing".
	State string `json:"state"`
}

// Healthy says whether the rule's last evaluation went without error. A rule not evaluated
// yet is not healthy: it may still fail.
func (r Rule) Healthy() bool { return r.Health == ruleHealthOK && r.LastError == "" }

// Alert is one alert that is pending or firing.
type Alert struct {
	Labels map[string]string `json:"labels"`
	// State is "pending" (its condition holds, not yet for the rule's for) or "firing".
	State string `json:"state"`
}

// APIError is an answer of Prometheus's API with status "error": a query it could not
// run, or a server not ready.
type APIError struct {
	URL  string
	Code int
	// Type and Message are Prometheus's errorType and error.
	Type, Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("GET %s: %d %s: %s: %s", e.URL, e.Code, http.StatusText(e.Code), e.Type, e.Message)
}

// maxAPIBody is the most of an API answer that is read: the targets, rules and alerts of a
// test cluster's Prometheus are well under a MiB.
const maxAPIBody = 32 << 20

// Targets returns the targets Prometheus scrapes (state active).
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	var data struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}

// Rules returns the rule groups Prometheus evaluates.
func (p *Prometheus) Rules(ctx context.Context) ([]RuleGroup, error) {
	var data struct {
		Groups []RuleGroup `json:"groups"`
	}
	err := p.get(ctx, "/api/v1/rules", nil, &data)
	return data.Groups, err
}

// Alerts returns the alerts that are pending or firing.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// Query runs the instant query q at the current time and returns its samples, each named by its __name__
// label (empty for a computed series), which is left out of its labels. A result other than
// a vector is an error.
func (p *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("the query %s gave a %s, not a vector", q, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		raw, _ := r.Value[1].(string) // Prometheus writes sample values as strings
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("the query %s gave the value %v, not a number", q, r.Value[1])
		}
		s := Sample{Name: r.Metric["__name__"], Labels: map[string]string{}, Value: v}
		for k, l := range r.Metric {
			if k != "__name__" {
				s.Labels[k] = l
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// get GETs path of the API with params and decodes the data of a "success" answer into
// out. An "error" answer is an *APIError; any other answer that is not 200 OK, a
// *StatusError.
func (p *Prometheus) get(ctx context.Context, path string, params url.Values, out any) error {
	u := strings.TrimSuffix(p.URL, "/") + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	tr := p.HTTP
	if tr == nil {
		tr = http.DefaultTransport
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // the body was read, or the answer is an error anyway
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody))
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", u, err)
	}
	return decodeAPI(u, resp.StatusCode, body, out)
}

// decodeAPI reads the answer body (HTTP status code) of a GET of u: Prometheus wraps every
// answer in {"status": "success"|"error", "data": ..., "errorType": ..., "error": ...}.
func decodeAPI(u string, code int, body []byte, out any) error {
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
		if code != http.StatusOK {
			return &StatusError{URL: u, Code: code, Body: firstLine(string(body), 200)}
		}
		return fmt.Errorf("GET %s: the answer is not Prometheus's API (%q): is the URL a Prometheus server?", u, firstLine(string(body), 100))
	}
	if env.Status != "success" {
		return &APIError{URL: u, Code: code, Type: env.ErrorType, Message: env.Error}
	}
	if len(env.Data) == 0 {
		return errors.New("GET " + u + ": the answer has no data")
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("GET %s: reading the data: %w", u, err)
	}
	return nil
}
