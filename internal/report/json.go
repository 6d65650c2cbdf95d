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
}

// Source identifies the result summarized without naming its file.
type Source struct {
	Target   string    `json:"target"`
	Kind     string    `json:"kind,omitempty"`
	Workload string    `json:"workload,omitempty"`
	Started  time.Time `json:"started"`
	Tool     string    `json:"tool_version,omitempty"`
}

// JSON writes the model's cell summaries as indented JSON (the preset's
// table is not summarized).
func (m *Model) JSON(w io.Writer) error {
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
