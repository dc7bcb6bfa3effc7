// Command dashlint checks a Grafana dashboard JSON against Grafana's own schema, as published
// in the Grafana Foundation SDK (types generated from Grafana's dashboard kind): a strict
// decode (unknown fields, wrong types, missing required fields fail), the schema's
// constraints, each panel's options and field config decoded strictly by its plugin's types,
// plus what a dashboard shipped with a chart must hold: unique panel ids, every query on the
// dashboard's datasource variable with an expression. On success it prints every PromQL
// expression, one per line, for promtool to parse.
//
// Usage: dashlint DASHBOARD.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dashlint: "+format+"\n", args...)
	os.Exit(1)
}

// failed is err unless it is the SDK's empty list of errors (a typed nil it returns on success).
func failed(err error) error {
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
		return nil
	}
	return err
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: dashlint DASHBOARD.json")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := failed(d.UnmarshalJSONStrict(raw)); err != nil {
		fail("%s does not follow Grafana's dashboard schema: %v", os.Args[1], err)
	}
	if err := failed(d.Validate()); err != nil {
		fail("%s breaks the schema's constraints: %v", os.Args[1], err)
	}
	if d.Uid == nil || *d.Uid == "" || d.Title == nil || *d.Title == "" {
		fail("the dashboard needs a uid and a title")
	}
	// The SDK's PanelOrRowPanel drops a panel whose strict decode returns its typed-nil error
	// list, so each panel is decoded here, by its own type.
	var top struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		fail("%v", err)
	}
	seen := map[uint32]bool{}
	var exprs []string
	for i, rawPanel := range top.Panels {
		var panel dashboard.Panel
		if err := failed(panel.UnmarshalJSONStrict(rawPanel)); err != nil {
			fail("panel %d does not follow Grafana's panel schema: %v", i, err)
		}
		if err := failed(panel.Validate()); err != nil {
			fail("panel %d breaks the schema's constraints: %v", i, err)
		}
		if panel.Type == "row" {
			fail("panel %d: rows are not used here", i)
		}
		if panel.Id == nil {
			fail("panel %d has no id", i)
		}
		if seen[*panel.Id] {
			fail("panel id %d used twice", *panel.Id)
		}
		seen[*panel.Id] = true
		// The queries as stored (the SDK's own decode of targets has the same typed-nil flaw).
		var queries struct {
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		}
		if err := json.Unmarshal(rawPanel, &queries); err != nil {
			fail("panel %d: %v", *panel.Id, err)
		}
		if len(queries.Targets) == 0 {
			fail("panel %d has no query", *panel.Id)
		}
		for _, q := range queries.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				fail("panel %d: a query without an expression", *panel.Id)
			}
			if q.Datasource.UID != "${datasource}" {
				fail("panel %d: a query on %q, not the dashboard's ${datasource}", *panel.Id, q.Datasource.UID)
			}
			exprs = append(exprs, strings.ReplaceAll(q.Expr, "\n", " "))
		}
	}
	if len(exprs) == 0 {
		fail("no panel, no query")
	}
	for _, e := range exprs {
		fmt.Println(e)
	}
}
