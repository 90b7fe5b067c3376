package convert

import (
	"bytes"
	"testing"

	"github.com/capctl/capctl/pkg/conversion"
)

func viewFixture() *Report {
	return &Report{
		Files: []*FileReport{{Path: "clusters/a.yaml", Objects: []conversion.ObjectReport{
			{Line: 1, Kind: "MachineDeployment", Namespace: "a", Name: "md", From: "v1beta1", To: "v1beta2", Action: conversion.Converted,
				Warnings: []string{"spec.progressDeadlineSeconds: 600 has no place in v1beta2", "second"}},
			{Line: 20, Kind: "ConfigMap", Name: "cm", Action: conversion.NotCAPI},
			{Line: 30, Kind: "Cluster", Namespace: "a", Name: "c", From: "v1beta2", To: "v1beta2", Action: conversion.Unchanged},
			{Line: 40, Kind: "?", Action: conversion.NotCAPI, Error: "not valid YAML"},
		}}},
		Written: []string{"clusters/a.yaml"},
	}
}

func TestReportWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := viewFixture().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	// The ConfigMap (not Cluster API, no error) has no row; a second warning gets its own line.
	want := `FILE                 OBJECT                   FROM → TO                       WARNINGS
clusters/a.yaml:1    MachineDeployment a/md   v1beta1 → v1beta2               spec.progressDeadlineSeconds: 600 has no place in v1beta2
                                                                              second
clusters/a.yaml:30   Cluster a/c              v1beta2 → v1beta2 (unchanged)
clusters/a.yaml:40   ?                         →  (not Cluster API)           error: not valid YAML
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestReportWriteWarningsAndSummary(t *testing.T) {
	rep := viewFixture()
	var b bytes.Buffer
	if err := rep.WriteWarnings(&b); err != nil {
		t.Fatal(err)
	}
	want := "Warning: MachineDeployment a/md (line 1): spec.progressDeadlineSeconds: 600 has no place in v1beta2\n" +
		"Warning: MachineDeployment a/md (line 1): second\n"
	if b.String() != want {
		t.Errorf("warnings: got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := rep.WriteSummary(&b, true, false); err != nil {
		t.Fatal(err)
	}
	if want := "Would convert 1 resource(s) to v1beta2. 2 resource(s) passed through unchanged. 2 warning(s).\n"; b.String() != want {
		t.Errorf("dry run summary: got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := rep.WriteSummary(&b, false, true); err != nil {
		t.Fatal(err)
	}
	if want := "Converted 1 resource(s) to v1beta2. 2 resource(s) passed through unchanged. 2 warning(s).\nRewrote 1 file(s).\n"; b.String() != want {
		t.Errorf("in-place summary: got %q, want %q", b.String(), want)
	}
}
