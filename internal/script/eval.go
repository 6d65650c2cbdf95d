package script

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Kind is the type of a Value: pgbench's null, boolean, int (int64) and
// double.
type Kind uint8

// The kinds of Value.
const (
	Null Kind = iota
	Boolean
	Integer
	Float
)

// Value is the value of a variable. The zero Value is NULL.
type Value struct {
	kind Kind
	i    int64
	f    float64
	b    bool
}

// Int, Double and Bool make Values.
func Int(i int64) Value      { return Value{kind: Integer, i: i} }
func Double(f float64) Value { return Value{kind: Float, f: f} }
func Bool(b bool) Value      { return Value{kind: Boolean, b: b} }

// Kind returns v's type.
func (v Value) Kind() Kind { return v.kind }

// String is v as pgbench writes it into SQL (getVariable): NULL, true,
// false, the integer, or the double with 15 significant digits (%.15g).
func (v Value) String() string {
	switch v.kind {
	case Boolean:
		return strconv.FormatBool(v.b)
	case Integer:
		return strconv.FormatInt(v.i, 10)
	case Float:
		switch {
		case math.IsNaN(v.f):
			return "nan"
		case math.IsInf(v.f, 1):
			return "inf"
		case math.IsInf(v.f, -1):
			return "-inf"
		}
		return strconv.FormatFloat(v.f, 'g', 15, 64)
	}
	return "NULL"
}

// Any is v as a Go value for a driver's bind parameter: int64, float64,
// bool, or nil for NULL.
func (v Value) Any() any {
	switch v.kind {
	case Boolean:
		return v.b
	case Integer:
		return v.i
	case Float:
		return v.f
	}
	return nil
}

// Text is v as a bind parameter in text format (PostgreSQL's): String's
// text, and nil (SQL NULL) for NULL, where pgbench would send the text
// "NULL".
func (v Value) Text() []byte {
	if v.kind == Null {
		return nil
	}
	return []byte(v.String())
}

func (v Value) typeName() string {
	return [...]string{"null", "boolean", "int", "double"}[v.kind]
}

// pgbench's parameter bounds for the random distributions.
const (
	minGaussianParam = 2.0
	minZipfianParam  = 1.001
	maxZipfianParam  = 1000.0
)

// env is what an evaluation reads: the variables and the random source.
type env struct {
	vars map[string]Value
	rng  *rand.Rand
}

func (v Value) toInt() (int64, error) {
	switch v.kind {
	case Integer:
		return v.i, nil
	case Float:
		d := math.RoundToEven(v.f)
		if math.IsNaN(d) || d < -9.223372036854775808e18 || d >= 9.223372036854775808e18 {
			return 0, fmt.Errorf("double to int overflow for %f", d)
		}
		return int64(d), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to int", v.typeName())
}

func (v Value) toDouble() (float64, error) {
	switch v.kind {
	case Float:
		return v.f, nil
	case Integer:
		return float64(v.i), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to double", v.typeName())
}

func (v Value) toBool() (bool, error) {
	if v.kind == Boolean {
		return v.b, nil
	}
	return false, fmt.Errorf("cannot coerce %s to boolean", v.typeName())
}

// truth is pgbench's valueTruth, for CASE: non-zero numbers and true.
func (v Value) truth() bool {
	switch v.kind {
	case Boolean:
		return v.b
	case Integer:
		return v.i != 0
	case Float:
		return v.f != 0
	}
	return false
}

// eval computes e as pgbench's evaluateExpr does. A left-deep chain of
// two-argument nodes, as the parser makes of 1 + 2 + ... + n, is computed
// in a loop from its first term: the stack grows with the expression's
// nesting (maxDepth), not with its length.
func (e *expr) eval(en *env) (Value, error) {
	if !e.chained() {
		return e.node(en)
	}
	var chain []*expr
	for n := e; n.chained(); n = n.args[0] {
		chain = append(chain, n)
	}
	v, err := chain[len(chain)-1].args[0].eval(en)
	for i := len(chain) - 1; i >= 0 && err == nil; i-- {
		v, err = chain[i].apply(v, en)
	}
	return v, err
}

// chained reports whether e is a two-argument node whose first argument
// is one too.
func (e *expr) chained() bool {
	return len(e.args) == 2 && len(e.args[0].args) == 2
}

// node computes e, its arguments by eval.
func (e *expr) node(en *env) (Value, error) {
	switch {
	case e.name != "":
		v, ok := en.vars[e.name]
		if !ok {
			return Value{}, fmt.Errorf("undefined variable %q", e.name)
		}
		return v, nil
	case e.op == "":
		return e.val, nil
	case e.op == "!case":
		for i := 0; i+1 < len(e.args); i += 2 {
			c, err := e.args[i].eval(en)
			if err != nil {
				return Value{}, err
			}
			if c.truth() {
				return e.args[i+1].eval(en)
			}
		}
		return e.args[len(e.args)-1].eval(en)
	case len(e.args) == 2:
		a, err := e.args[0].eval(en)
		if err != nil {
			return Value{}, err
		}
		return e.apply(a, en)
	}
	args := make([]Value, len(e.args))
	for i, a := range e.args {
		v, err := a.eval(en)
		if err != nil {
			return Value{}, err
		}
		args[i] = v
	}
	return e.call(args, en)
}

// apply computes a two-argument e whose first argument is a: AND and OR
// lazily, with SQL's NULL; anything else on both values.
func (e *expr) apply(a Value, en *env) (Value, error) {
	if e.op == "!and" || e.op == "!or" {
		if a.kind == Null {
			return Value{}, nil
		}
		ba, err := a.toBool()
		if err != nil {
			return Value{}, err
		}
		if ba == (e.op == "!or") {
			return Bool(ba), nil
		}
		b, err := e.args[1].eval(en)
		if err != nil || b.kind == Null {
			return Value{}, err
		}
		bb, err := b.toBool()
		if err != nil {
			return Value{}, err
		}
		return Bool(bb), nil
	}
	b, err := e.args[1].eval(en)
	if err != nil {
		return Value{}, err
	}
	return e.call([]Value{a, b}, en)
}

// call computes e's function on its arguments' values.
func (e *expr) call(args []Value, en *env) (Value, error) {
	if e.op == "!is" {
		a, b := args[0], args[1]
		return Bool(a.kind == b.kind && (a.kind != Boolean || a.b == b.b)), nil
	}
	for _, a := range args {
		if a.kind == Null {
			return Value{}, nil // a function of NULL is NULL
		}
	}
	return apply(e.op, args, en)
}

var errDivZero = errors.New("division by zero")

func apply(op string, a []Value, en *env) (Value, error) {
	switch op {
	case "+", "-", "*", "/", "mod", "=", "<>", "<=", "<":
		if (a[0].kind == Float || a[1].kind == Float) && op != "mod" {
			l, err := a[0].toDouble()
			if err != nil {
				return Value{}, err
			}
			r, err := a[1].toDouble()
			if err != nil {
				return Value{}, err
			}
			return doubleOp(op, l, r), nil
		}
		l, err := a[0].toInt()
		if err != nil {
			return Value{}, err
		}
		r, err := a[1].toInt()
		if err != nil {
			return Value{}, err
		}
		return intOp(op, l, r)
	case "&", "|", "#", "<<", ">>":
		l, err := a[0].toInt()
		if err != nil {
			return Value{}, err
		}
		r, err := a[1].toInt()
		if err != nil {
			return Value{}, err
		}
		switch op {
		case "&":
			return Int(l & r), nil
		case "|":
			return Int(l | r), nil
		case "#":
			return Int(l ^ r), nil
		case "<<":
			return Int(l << uint64(r)), nil
		}
		return Int(l >> uint64(r)), nil
	case "!not":
		b, err := a[0].toBool()
		return Bool(!b), err
	case "pi":
		return Double(math.Pi), nil
	case "abs":
		switch a[0].kind {
		case Integer:
			if a[0].i == math.MinInt64 {
				return Value{}, errors.New("bigint abs out of range")
			}
			return Int(max(a[0].i, -a[0].i)), nil
		case Float:
			return Double(math.Abs(a[0].f)), nil
		}
		return Value{}, fmt.Errorf("cannot take abs of %s", a[0].typeName())
	case "double", "sqrt", "ln", "exp":
		d, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		switch op {
		case "sqrt":
			d = math.Sqrt(d)
		case "ln":
			d = math.Log(d)
		case "exp":
			d = math.Exp(d)
		}
		return Double(d), nil
	case "int":
		i, err := a[0].toInt()
		return Int(i), err
	case "pow":
		l, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		r, err := a[1].toDouble()
		if err != nil {
			return Value{}, err
		}
		return Double(math.Pow(l, r)), nil
	case "least", "greatest":
		return extremum(op == "least", a)
	case "random", "random_gaussian", "random_exponential", "random_zipfian":
		return random(op, a, en.rng)
	case "hash_murmur2", "hash_fnv1a":
		v, err := a[0].toInt()
		if err != nil {
			return Value{}, err
		}
		seed, err := a[1].toInt()
		if err != nil {
			return Value{}, err
		}
		if op == "hash_fnv1a" {
			return Int(hashFNV1a(v, uint64(seed))), nil
		}
		return Int(hashMurmur2(v, uint64(seed))), nil
	}
	return Value{}, fmt.Errorf("unknown function %s", op)
}

func doubleOp(op string, l, r float64) Value {
	switch op {
	case "+":
		return Double(l + r)
	case "-":
		return Double(l - r)
	case "*":
		return Double(l * r)
	case "/":
		return Double(l / r)
	case "=":
		return Bool(l == r)
	case "<>":
		return Bool(l != r)
	case "<=":
		return Bool(l <= r)
	}
	return Bool(l < r)
}

func intOp(op string, l, r int64) (Value, error) {
	switch op {
	case "+":
		s := l + r
		if (l > 0 && r > 0 && s < 0) || (l < 0 && r < 0 && s >= 0) {
			return Value{}, errors.New("bigint add out of range")
		}
		return Int(s), nil
	case "-":
		s := l - r
		if (l >= 0 && r < 0 && s < 0) || (l < 0 && r > 0 && s >= 0) {
			return Value{}, errors.New("bigint sub out of range")
		}
		return Int(s), nil
	case "*":
		p := l * r
		if l != 0 && (p/l != r || l == -1 && r == math.MinInt64 || r == -1 && l == math.MinInt64) {
			return Value{}, errors.New("bigint mul out of range")
		}
		return Int(p), nil
	case "/", "mod":
		switch {
		case r == 0:
			return Value{}, errDivZero
		case r == -1 && op == "mod":
			return Int(0), nil
		case r == -1 && l == math.MinInt64:
			return Value{}, errors.New("bigint div out of range")
		case op == "mod":
			return Int(l % r), nil
		}
		return Int(l / r), nil
	case "=":
		return Bool(l == r), nil
	case "<>":
		return Bool(l != r), nil
	case "<=":
		return Bool(l <= r), nil
	}
	return Bool(l < r), nil
}

func extremum(least bool, a []Value) (Value, error) {
	double := false
	for _, v := range a {
		double = double || v.kind == Float
	}
	if double {
		best, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		for _, v := range a[1:] {
			d, err := v.toDouble()
			if err != nil {
				return Value{}, err
			}
			if least {
				best = math.Min(best, d)
			} else {
				best = math.Max(best, d)
			}
		}
		return Double(best), nil
	}
	best, err := a[0].toInt()
	if err != nil {
		return Value{}, err
	}
	for _, v := range a[1:] {
		i, err := v.toInt()
		if err != nil {
			return Value{}, err
		}
		if least {
			best = min(best, i)
		} else {
			best = max(best, i)
		}
	}
	return Int(best), nil
}

// random draws from the distributions of pgbench's random functions, with
// its checks of the range and the parameter.
func random(op string, a []Value, rng *rand.Rand) (Value, error) {
	lo, err := a[0].toInt()
	if err != nil {
		return Value{}, err
	}
	hi, err := a[1].toInt()
	if err != nil {
		return Value{}, err
	}
	if lo > hi {
		return Value{}, errors.New("empty range given to random")
	}
	if hi-lo < 0 || hi-lo == math.MaxInt64 { // hi - lo + 1 overflows int64
		return Value{}, errors.New("random range is too large")
	}
	if op == "random" {
		return Int(lo + int64(rng.Uint64N(uint64(hi-lo)+1))), nil
	}
	param, err := a[2].toDouble()
	if err != nil {
		return Value{}, err
	}
	switch op {
	case "random_gaussian":
		if !(param >= minGaussianParam) {
			return Value{}, fmt.Errorf("gaussian parameter must be at least %f (not %f)", minGaussianParam, param)
		}
		return Int(gaussian(rng, lo, hi, param)), nil
	case "random_zipfian":
		if !(param >= minZipfianParam && param <= maxZipfianParam) {
			return Value{}, fmt.Errorf("zipfian parameter must be in range [%.3f, %.0f] (not %f)", minZipfianParam, maxZipfianParam, param)
		}
		return Int(zipfian(rng, lo, hi, param)), nil
	}
	if !(param > 0) {
		return Value{}, fmt.Errorf("exponential parameter must be greater than zero (not %f)", param)
	}
	return Int(exponential(rng, lo, hi, param)), nil
}

// scale maps r in [0, 1) onto [lo, hi] as pgbench does, clamped: for
// ranges beyond 2^53 the float product can round up past hi.
func scale(lo, hi int64, r float64) int64 {
	return min(hi, lo+int64(float64(hi-lo+1)*r))
}

// exponential is pgbench's getExponentialRand: the density at hi is
// exp(-param) times that at lo.
func exponential(rng *rand.Rand, lo, hi int64, param float64) int64 {
	cut := math.Exp(-param)
	uniform := 1.0 - rng.Float64() // (0, 1]
	r := -math.Log(cut+(1.0-cut)*uniform) / param
	return scale(lo, hi, r)
}

// gaussian is pgbench's getGaussianRand: Box-Muller, redrawn until within
// param standard deviations, mapped onto the range.
func gaussian(rng *rand.Rand, lo, hi int64, param float64) int64 {
	var stdev float64
	for {
		r1 := 1.0 - rng.Float64()
		r2 := 1.0 - rng.Float64()
		stdev = math.Sqrt(-2.0*math.Log(r1)) * math.Sin(2.0*math.Pi*r2)
		if stdev >= -param && stdev < param {
			break
		}
	}
	return scale(lo, hi, (stdev+param)/(param*2.0))
}

// zipfian is pgbench's getZipfianRand and computeIterativeZipfian: the
// rejection method of Devroye, "Non-Uniform Random Variate Generation"
// (1986), p. 550-551; 1 (lo) is the most frequent value.
func zipfian(rng *rand.Rand, lo, hi int64, s float64) int64 {
	n := hi - lo + 1
	if n <= 1 {
		return lo
	}
	b := math.Pow(2.0, s-1.0)
	for {
		u, v := rng.Float64(), rng.Float64()
		x := math.Floor(math.Pow(u, -1.0/(s-1.0)))
		t := math.Pow(1.0+1.0/x, s-1.0)
		if v*x*(t-1.0)/(b-1.0) <= t/b && x <= float64(n) {
			return lo - 1 + int64(x)
		}
	}
}

// pgbench's hash constants.
const (
	fnvPrime       = 0x100000001b3
	fnvOffsetBasis = 0xcbf29ce484222325
	mm2Mul         = 0xc6a4a7935bd1e995
	mm2MulTimes8   = 0x35253c9ade8f4ca8
	mm2Rot         = 47
)

func hashFNV1a(val int64, seed uint64) int64 {
	result := int64(fnvOffsetBasis ^ seed)
	for range 8 {
		octet := val & 0xff
		val >>= 8
		result ^= octet
		result *= fnvPrime
	}
	return result
}

func hashMurmur2(val int64, seed uint64) int64 {
	result := seed ^ mm2MulTimes8
	k := uint64(val)
	k *= mm2Mul
	k ^= k >> mm2Rot
	k *= mm2Mul
	result ^= k
	result *= mm2Mul
	result ^= result >> mm2Rot
	result *= mm2Mul
	result ^= result >> mm2Rot
	return int64(result)
}
