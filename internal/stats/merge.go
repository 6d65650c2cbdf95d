package stats

// MergeHists adds histograms exactly, from their HDR encodings: the
// counts of the sum are the sums of theirs.
func MergeHists(hs ...Hist) (Hist, error) {
	sum := NewRecorder()
	for _, h := range hs {
		r, err := DecodeHist(h)
		if err != nil {
			return Hist{}, err
		}
		sum.Merge(r)
	}
	return sum.Hist(), nil
}
