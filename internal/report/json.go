package report

import (
	"encoding/json"
	"io"
	"time"
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
	// Tables are the report's tables, cell by cell, as the text report
	// and the page show them (a preset's first).
	Tables []Table `json:"tables"`
}

// Source identifies the result summarized without naming its file.
type Source struct {
	Target   string    `json:"target"`
	Kind     string    `json:"kind,omitempty"`
	Workload string    `json:"workload,omitempty"`
	Started  time.Time `json:"started"`
	Tool     string    `json:"tool_version,omitempty"`
}

// JSON writes the model's cell summaries and its tables as indented
// JSON.
func (m *Model) JSON(w io.Writer) error {
	cells := m.Cells
	if cells == nil {
		cells = []CellSummary{}
	}
	tables := []Table{}
	if m.Preset != nil {
		tables = append(tables, *m.Preset)
	}
	for _, b := range m.Body {
		if b.Table != nil {
			tables = append(tables, *b.Table)
		}
	}
	data, err := json.MarshalIndent(summary{
		Schema:  SummarySchema,
		Version: SummaryVersion,
		Source:  m.Source,
		Cells:   cells,
		Tables:  tables,
	}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
