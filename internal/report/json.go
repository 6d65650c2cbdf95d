package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// Summary schema: a versioned digest of a result file, cell by cell.
const (
	SummarySchema  = "tlsbench.summary"
	SummaryVersion = 1
)

type summary struct {
	Schema  string        `json:"schema"`
	Version int           `json:"version"`
	Source  Source        `json:"source"`
	Cells   []CellSummary `json:"cells"`
}

// Source identifies the result summarized without naming its file.
type Source struct {
	Target   string    `json:"target"`
	Kind     string    `json:"kind,omitempty"`
	Workload string    `json:"workload,omitempty"`
	Started  time.Time `json:"started"`
	Tool     string    `json:"tool_version,omitempty"`
}

// JSON writes the summary of r as indented JSON.
func JSON(w io.Writer, r *result.Result) error {
	m, _ := Build(r) // the preset's table is not summarized
	cells := m.Cells
	if cells == nil {
		cells = []CellSummary{}
	}
	data, err := json.MarshalIndent(summary{
		Schema:  SummarySchema,
		Version: SummaryVersion,
		Source:  m.Source,
		Cells:   cells,
	}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
