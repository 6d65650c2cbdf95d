package result

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/files"
)

// FrameMark starts the lines that frame a shard's result on a stream
// (-o -): "tlsbench-result shard=I/N begin", the result as one line of
// compact JSON, "tlsbench-result shard=I/N end". A log collector may put
// anything before the mark (kubectl logs --prefix: "[pod/NAME/CONTAINER] ")
// as long as it puts the same before the lines inside the frame.
const FrameMark = "tlsbench-result"

// WriteFrame writes r, a shard's result, framed for ReadParts.
func WriteFrame(w io.Writer, r *Result) error {
	if r.Shard == nil {
		return fmt.Errorf("only a shard's result is framed")
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	label := fmt.Sprintf("%s shard=%d/%d", FrameMark, r.Shard.Index, r.Shard.Count)
	_, err = fmt.Fprintf(w, "%s begin\n%s\n%s end\n", label, data, label)
	return err
}

// ReadParts reads the shard results in a file: a result file, or any text
// (a kubectl logs dump of every shard) holding framed results among other
// lines, which it ignores.
func ReadParts(path string) ([]Part, error) {
	data, err := files.Read(path, "shard result", files.MaxResult)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		r, err := Decode(data, path)
		if err != nil {
			return nil, err
		}
		return []Part{{Name: path, Result: r}}, nil
	}
	type frame struct {
		label string
		lines []string
	}
	open := map[string]*frame{} // by the prefix before the mark
	var parts []Part
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if i := strings.Index(line, FrameMark+" "); i >= 0 {
			prefix := line[:i]
			label, verb, ok := strings.Cut(strings.TrimPrefix(line[i:], FrameMark+" "), " ")
			if !ok || !strings.HasPrefix(label, "shard=") || (verb != "begin" && verb != "end") {
				continue // a line that only mentions the mark
			}
			f := open[prefix]
			switch {
			case verb == "begin":
				open[prefix] = &frame{label: label}
			case f == nil || f.label != label:
				return nil, fmt.Errorf("%s: %s %s end has no begin line before it", path, FrameMark, label)
			default:
				delete(open, prefix)
				name := fmt.Sprintf("%s (%s)", path, label)
				r, err := Decode([]byte(strings.Join(f.lines, "")), name)
				if err != nil && len(f.lines) > 1 {
					// A line of the pod's stderr among the frame's (a log
					// collector orders the two streams only roughly): the
					// result is its longest line, unless a runtime split it.
					longest := slices.MaxFunc(f.lines, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
					if r2, err2 := Decode([]byte(longest), name); err2 == nil {
						r, err = r2, nil
					}
				}
				if err != nil {
					return nil, err
				}
				if r.Shard == nil || label != fmt.Sprintf("shard=%d/%d", r.Shard.Index, r.Shard.Count) {
					return nil, fmt.Errorf("%s: the frame's result is not that shard's", name)
				}
				parts = append(parts, Part{Name: name, Result: r})
			}
			continue
		}
		// A line inside a frame: the longest open prefix it carries.
		var best string
		var in *frame
		for prefix, f := range open {
			if strings.HasPrefix(line, prefix) && (in == nil || len(prefix) > len(best)) {
				best, in = prefix, f
			}
		}
		if in != nil {
			in.lines = append(in.lines, line[len(best):])
		}
	}
	for _, f := range open {
		return nil, fmt.Errorf("%s: %s %s has no end line: the log was cut short (was the pod's log rotated, or the run stopped?)", path, FrameMark, f.label)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s holds no shard result: neither a result file nor %s frames (a shard run with -o - writes them)", path, FrameMark)
	}
	return parts, nil
}
