package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// applyCRDs server-side applies every CustomResourceDefinition in the YAML files of dirs
// (field manager spinel-k8s, so a restart re-applies without conflict) and waits until each
// one is Established, that is, served.
func applyCRDs(ctx context.Context, config *rest.Config, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	client, err := apiextensions.NewForConfig(config)
	if err != nil {
		return err
	}
	var names []string
	for _, dir := range dirs {
		files, err := yamlFiles(dir)
		if err != nil {
			return err
		}
		for _, file := range files {
			docs, err := yamlDocuments(file)
			if err != nil {
				return err
			}
			for _, doc := range docs {
				name, err := applyCRD(ctx, client, doc)
				if err != nil {
					return fmt.Errorf("apply CRD from %s: %w", file, err)
				}
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		if err := waitEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	return nil
}

func yamlFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--crd %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--crd %s: no .yaml or .yml files", dir)
	}
	sort.Strings(files)
	return files, nil
}

// yamlDocuments splits a file into its non-empty YAML documents, each converted to JSON.
func yamlDocuments(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		json, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if string(json) == "null" {
			continue // a document of comments only
		}
		docs = append(docs, json)
	}
	return docs, nil
}

func applyCRD(ctx context.Context, client apiextensions.Interface, doc []byte) (string, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(doc, &crd); err != nil {
		return "", err
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return "", fmt.Errorf("not a CustomResourceDefinition with a name (kind %q, name %q)", crd.Kind, crd.Name)
	}
	force := true
	_, err := client.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, doc,
		metav1.PatchOptions{FieldManager: "spinel-k8s", Force: &force})
	if err != nil {
		return "", fmt.Errorf("%s: %w", crd.Name, err)
	}
	return crd.Name, nil
}

func waitEstablished(ctx context.Context, client apiextensions.Interface, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("CRD %s: names not accepted: %s", name, c.Message)
			}
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
			last = fmt.Sprintf("%s=%s: %s", c.Type, c.Status, c.Message)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s did not become Established (%s): %w", name, last, err)
	}
	return nil
}
