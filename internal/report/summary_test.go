package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

func TestSummaryGolden(t *testing.T) {
	files := append(storedFiles(t), filepath.Join("testdata", "clients-connect.json"), filepath.Join("testdata", "clients-pool.json"), filepath.Join("testdata", "clients-wire.json"))
	formats := map[string]func(*Model, io.Writer) error{"csv": (*Model).CSV, "json": (*Model).JSON}
	for _, jsonPath := range files {
		r, err := result.Read(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		for ext, render := range formats {
			var got bytes.Buffer
			if err := render(Build(r), &got); err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(jsonPath, ".json")+"."+ext+".golden", got.Bytes())
		}
	}
}

// TestSummaryColumns checks that csv and json name the same fields alike,
// in the same order, and that every row has every column.
func TestSummaryColumns(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "measured-connect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Build(r).CSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], columns) || len(rows) != 1+len(Build(r).Cells) {
		t.Fatalf("csv header %v and %d rows", rows[0], len(rows))
	}
	data, _ := json.Marshal(Build(r).Cells[0])
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
	var keys []string
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	if !slices.Equal(keys, columns) {
		t.Errorf("json keys %v, csv columns %v", keys, columns)
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{4134.23456, "4134.2"}, {456.93, "456.93"}, {1.5, "1.5"}, {100.004, "100"}, {0.0961234, "0.096123"}, {-88.834, "-88.834"},
		{123456.7, "123457"}, {0, "0"}, {-0.0000001, "0"}, {math.NaN(), ""}, {math.Inf(1), ""},
	}
	for _, tt := range tests {
		if got := number(tt.v).String(); got != tt.want {
			t.Errorf("number(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
	if b, _ := json.Marshal([]number{1.5, number(math.NaN())}); string(b) != "[1.5,null]" {
		t.Errorf("json: %s", b)
	}
}

func TestSummaryEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Build(result.New()).JSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"cells": []`) {
		t.Errorf("empty result: %s", b.String())
	}
	b.Reset()
	if err := Build(result.New()).CSV(&b); err != nil || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("empty result csv %q, %v", b.String(), err)
	}
}
