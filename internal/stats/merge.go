package stats

import "github.com/tlsbench/tlsbench/internal/result"

// MergeHists adds histograms exactly, from their HDR encodings: the
// counts of the result are the sums of theirs (result.HistMerger).
func MergeHists(hs ...result.Hist) (result.Hist, error) {
	sum := NewRecorder()
	for _, h := range hs {
		r, err := DecodeHist(h)
		if err != nil {
			return result.Hist{}, err
		}
		sum.Merge(r)
	}
	return sum.Hist(), nil
}
