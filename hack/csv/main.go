// Command csv finishes the ClusterServiceVersion that `operator-sdk generate bundle` wrote,
// with what the SDK cannot know or would make irreproducible:
//
//   - createdAt is the release date given (the SDK stamps the current time, so every run
//     would change the committed bundle);
//   - containerImage is the operator image, and relatedImages lists it first, next to the
//     etcd images the SDK derives from the Deployment's RELATED_IMAGE_* variables;
//   - the icon is the SVG drawn in docs/icon.svg.
//
// Usage: go run ./hack/csv -csv bundle/manifests/etcdpilot.clusterserviceversion.yaml \
//
//	-created-at 2026-11-21T00:00:00Z -icon docs/icon.svg
package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	path := flag.String("csv", "", "the ClusterServiceVersion file to finish in place")
	createdAt := flag.String("created-at", "", "release date, RFC 3339 in UTC (2026-11-21T00:00:00Z)")
	icon := flag.String("icon", "", "SVG icon file")
	flag.Parse()
	if err := finish(*path, *createdAt, *icon); err != nil {
		fmt.Fprintln(os.Stderr, "csv:", err)
		os.Exit(1)
	}
}

func finish(path, createdAt, iconPath string) error {
	if path == "" || createdAt == "" || iconPath == "" {
		return errors.New("-csv, -created-at and -icon are all required")
	}
	if _, err := time.Parse(time.RFC3339, createdAt); err != nil {
		return fmt.Errorf("-created-at: %w", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	svg, err := os.ReadFile(iconPath)
	if err != nil {
		return err
	}
	var csv map[string]any
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	image, err := managerImage(csv)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}

	annotations := object(object(csv, "metadata"), "annotations")
	annotations["createdAt"] = createdAt
	annotations["containerImage"] = image

	spec := object(csv, "spec")
	spec["icon"] = []any{map[string]any{"base64data": base64.StdEncoding.EncodeToString(svg), "mediatype": "image/svg+xml"}}
	related := []any{map[string]any{"name": "etcdpilot", "image": image}}
	if existing, ok := spec["relatedImages"].([]any); ok {
		for _, r := range existing {
			if m, ok := r.(map[string]any); ok && m["name"] != "etcdpilot" {
				related = append(related, r)
			}
		}
	}
	spec["relatedImages"] = related

	out, err := yaml.Marshal(csv)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// managerImage is the image of the manager container of the CSV's one Deployment.
func managerImage(csv map[string]any) (string, error) {
	install, _ := object(csv, "spec")["install"].(map[string]any)
	spec, _ := install["spec"].(map[string]any)
	deployments, _ := spec["deployments"].([]any)
	if len(deployments) != 1 {
		return "", fmt.Errorf("want one Deployment in the install strategy, found %d", len(deployments))
	}
	d, _ := deployments[0].(map[string]any)
	dspec, _ := d["spec"].(map[string]any)
	tmpl, _ := dspec["template"].(map[string]any)
	pspec, _ := tmpl["spec"].(map[string]any)
	containers, _ := pspec["containers"].([]any)
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
			if image, ok := m["image"].(string); ok && image != "" {
				return image, nil
			}
		}
	}
	return "", errors.New("no manager container with an image in the Deployment")
}

// object returns m[key] as a map, creating it when absent.
func object(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}
