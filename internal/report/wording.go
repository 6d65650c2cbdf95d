package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The wording of the findings: each fact in English, and the findings
// section of the text report wrapped for a terminal.

// phrase says a finding's fact in one sentence.
func (ix *index) phrase(k Kind, f Fact) string {
	switch f := f.(type) {
	case NothingMeasured:
		return "No trial finished: there is nothing to conclude from this run."
	case AdviceFact:
		return adviceWords(f)
	case ReplicationFact:
		return replicationWords(f)
	case LagCapacityFact:
		return lagCapacityWords(f)
	case Interrupted:
		if f.Planned > 0 {
			return fmt.Sprintf("The run was interrupted after %d of %d trials: what follows rests on the trials that finished.", f.Finished, f.Planned)
		}
		return fmt.Sprintf("The run was interrupted after %s: what follows rests on the trials that finished.", plural(f.Finished, "trial"))
	case StoppedOnError:
		return fmt.Sprintf("The run stopped on an error after %s (%s): what follows rests on the trials that finished.", plural(f.Finished, "trial"), f.Error)
	case OneVariant:
		switch {
		case f.ByDefault && f.Variant == "plain":
			return "Only plain was measured: the target's URL asks for plaintext, and without --tls a URL target runs what its URL asks for. To compare with TLS, give a URL that asks for TLS (sslmode=require, tls=true; Redis's and HTTP's TLS port as rediss:// or https://), or --tls off,auto where one port takes both."
		case f.ByDefault:
			return fmt.Sprintf("Only %s was measured: the server refused the other variant of the default comparison (see the warning), so there is nothing here to compare it with.", f.Variant)
		}
		return fmt.Sprintf("Only one variant was measured (%s): there is nothing to compare it with, so this run says nothing about what TLS costs and supports no recommendation.", f.Variant)
	case NoPlain:
		return "No plain variant was measured: what TLS itself costs cannot be told from this run; the variants are compared with each other."
	case Outliers:
		return outlierWords(f)
	case NoDifference:
		return ix.noDifferenceWords(f)
	case SingleTrial:
		return ix.singleTrialWords(f)
	case ConnectCost:
		if f.Cheapest {
			return fmt.Sprintf("The cheapest TLS variant measured, %s, %s.", f.To, strings.Replace(ix.costWords(f.Contrast), " with "+f.To, "", 1))
		}
		return capFirst(ix.concWords(plan.Connect, f.Concurrency)+"a new connection "+ix.costWords(f.Contrast)) + "."
	case LargestPhase:
		if !f.More {
			return fmt.Sprintf("%s takes %s of a %s connection's %s, about as much as TLS adds with %s (%s%s): TLS is not the only large cost of a new connection here.",
				capFirst(phaseWords(f.Phase)), msWords(f.MS), f.Plain, msWords(f.Total), f.TLS.To, msWords(f.TLS.MS), withinWords(f.Diff))
		}
		return fmt.Sprintf("%s takes %s of a %s connection's %s, more than TLS adds with %s (%s): TLS is not the largest cost of a new connection here.",
			capFirst(phaseWords(f.Phase)), msWords(f.MS), f.Plain, msWords(f.Total), f.TLS.To, msWords(f.TLS.MS))
	case HelloRetry:
		return helloWords(k, f)
	case GroupChange:
		return ix.groupWords(f)
	case HybridKex:
		return hybridKexWords(f)
	case VersionChange:
		return ix.versionWords(f)
	case PreferTLS13:
		switch f.Because {
		case SavesRoundTrip:
			return fmt.Sprintf("Prefer TLS 1.3 to TLS 1.2: it saves %s per new connection and was not measurably slower here.", pluralFloat(f.RoundTrips, "round trip"))
		case SavesRoundTripUntimed:
			return fmt.Sprintf("Prefer TLS 1.3 to TLS 1.2: it saves %s per new connection; with one trial each, this run cannot tell whether it costs more local time.", pluralFloat(f.RoundTrips, "round trip"))
		case BeyondRTT:
			return fmt.Sprintf("Prefer TLS 1.3 to TLS 1.2 wherever the round trip between client and server exceeds %s: the round trip it saves outweighs the local time it costs beyond that.", msWords(f.BeyondMS))
		}
		return "Prefer TLS 1.3 to TLS 1.2: it made more connections per second here."
	case KeyChange:
		cpu := ""
		if f.CPUAt != "" {
			cpu = fmt.Sprintf(" (server CPU per connection %s against %s, %s)", msWords(f.CPUKey), msWords(f.CPURef), contextWords(ix.info[f.CPUAt], "key"))
		}
		return fmt.Sprintf("Server key %s instead of %s: %s%s.", f.Key, f.Ref, ix.effects(f.Pairs, "key"), cpu)
	case WeakKeyFastest:
		return fmt.Sprintf("%s made the most connections per second %s, but %s keys are too weak to deploy: that is no reason to use them.",
			f.Key, contextWords(ix.info[f.From], "key"), weakKeys[f.Key])
	case UseKey:
		setting := strings.TrimPrefix(contextWords(ix.info[f.From], "key"), "with ")
		why := fmt.Sprintf("%s here (%s)", ix.change(plan.Connect, f.Delta, f.Worst, false), setting)
		if ix.info[f.From].Key == f.Best {
			why = fmt.Sprintf("%s made %s here (%s)", f.Worst, ix.change(plan.Connect, f.Delta, f.Best, false), setting)
		}
		return fmt.Sprintf("Use %s server keys rather than %s: %s.", f.Best, f.Worst, why)
	case ResumeRefused:
		var parts []string
		for _, s := range f.Variants {
			parts = append(parts, fmt.Sprintf("%s: %s resumed", s.Variant, percent(s.Resumed, s.Conns)))
		}
		return fmt.Sprintf("The server did not resume TLS sessions (%s): those variants measured full handshakes, and resumption cannot help with this server as configured.", strings.Join(parts, "; "))
	case Resumption:
		s := "Resuming TLS sessions instead of full handshakes: " + ix.effects(f.Pairs, "resume")
		if f.SavesRoundTrip {
			s += "; a resumed TLS 1.2 handshake takes a round trip fewer"
		}
		return s + "."
	case LetResume:
		return fmt.Sprintf("Let clients resume TLS sessions and keep session tickets or a session cache enabled on the server: resumption made up to %s here.", ix.change(plan.Connect, f.Best.Delta, "a full handshake", false))
	case AuthChange:
		return ix.authWords(f)
	case ClientCertCost:
		return ix.clientCertWords(f)
	case DirectTLS:
		return ix.directWords(f)
	case PathRanking:
		return pathWords(f)
	case PreferAEAD:
		return aeadWords(f)
	case ServerTLSCost:
		return serverTLSWords(f)
	case TunnelCost:
		return ix.tunnelWords(f)
	case UseTunnel:
		if ix.pathKind(f.Versus.To) == plan.RoutePgbouncer {
			return fmt.Sprintf("Where the application opens a connection per request, put a pooler before the server (%s): it made %s here, since PgBouncer reuses its server connections: the server forks no backend, and makes no TLS handshake, per client connection.", f.Versus.To, ix.change(plan.Connect, f.Versus.Delta, f.Versus.From, false))
		}
		return fmt.Sprintf("Where connections cannot be pooled, carry them through a long-lived tunnel (%s): it made %s here, since a database connection through it does not pay a full TLS handshake of its own (a channel open, or a resumed handshake between stunnels).", f.Versus.To, ix.change(plan.Connect, f.Versus.Delta, f.Versus.From, false))
	case PersistentSame:
		return ix.persistentSameWords(f)
	case PersistentVariant:
		return ix.persistentVariantWords(f)
	case RTTSetup:
		return rttWords(f)
	case PerConnBreakEven:
		return perConnWords(f)
	case StormRecovery:
		return stormWords(f)
	case Capacity:
		return capacityWords(f)
	case WireHidden, WireUnseen, WireResumed, WireHelloRetry, WireTurns:
		return wireWords(f)
	case WireCheckDiff, WireCheckAgree:
		return wireCheckWords(f)
	case Pool:
		why := fmt.Sprintf("TLS's cost is paid when a connection opens (up to %s", msWords(f.Dearest.MS))
		if rt := f.Dearest.RoundTrips; !math.IsNaN(rt) && rt > 0.5 {
			why += " and " + pluralFloat(roundRT(rt), "round trip")
		}
		why += " here)"
		noun, _ := ix.noun(plan.Pool)
		switch {
		case f.Persistent > 0:
			why += fmt.Sprintf(", while on persistent connections it cost at most %s of the %s", pctWords(f.Persistent), noun)
		case f.Persistent == 0:
			why += fmt.Sprintf(", while on persistent connections it made no measurable difference in %s", noun)
		}
		return fmt.Sprintf("Pool connections or keep them alive: %s.", why)
	case MeasureTunnel:
		verb := "is predicted to add"
		if f.Measured {
			verb = "added"
		}
		return fmt.Sprintf("Where connections cannot be pooled and the round trip is long, every new TLS connection pays its handshake again: at %s RTT, TLS %s up to %s to every new connection here (%s). Measure whether paying it once per tunnel is cheaper for you (--via ssh,stunnel): this run measured no tunnel.",
			plan.RTTLabel(f.RTT), verb, msWords(f.MS), f.Variant)
	case StackCPU:
		return stackCPUWords(f)
	case StackLoss:
		return ix.stackLossWords(f)
	case ClientBound:
		return clientBoundWords(f)
	case StackThreads:
		return stackThreadsWords(f)
	case Ceiling:
		return ceilingWords(f.CeilingRow)
	case SignRates:
		var parts []string
		for _, s := range f.Signs {
			parts = append(parts, fmt.Sprintf("%s %s", s.Name, num(s.PerCore, rate)))
		}
		fast, slow := f.Signs[0], f.Signs[len(f.Signs)-1]
		return fmt.Sprintf("%s signs per second on one core: %s; a server with %s keys can complete %s× the full handshakes of one with %s keys.",
			f.Library, strings.Join(parts, ", "), fast.Name, times(fast.PerCore/slow.PerCore), slow.Name)
	case FastKey:
		return fmt.Sprintf("Where clients accept them, give servers %s keys rather than %s: with %s one core signs %s× as many full handshakes per second.",
			f.Fast.Name, f.Slow.Name, f.Library, times(f.Fast.PerCore/f.Slow.PerCore))
	case CipherRates:
		var parts []string
		for _, c := range f.Ciphers {
			parts = append(parts, fmt.Sprintf("%s %s MB/s", c.Name, num(c.PerCore/1e6, rate)))
		}
		return fmt.Sprintf("%s encrypts on one core, %d-byte records: %s.", f.Library, f.Size, strings.Join(parts, ", "))
	}
	panic(fmt.Sprintf("report: no wording for %T", f))
}

func (ix *index) noDifferenceWords(f NoDifference) string {
	x := f.Contrasts[0]
	if len(f.Contrasts) == 1 {
		return capFirst(fmt.Sprintf("%sa new connection with %s and one with %s: %s.", ix.concWords(plan.Connect, x.Concurrency), x.To, x.From, ix.none(x, false)))
	}
	var names, cis []string
	for _, y := range f.Contrasts {
		names = append(names, y.To)
		cis = append(cis, y.To+" "+pctCI(y.Delta))
	}
	noun, _ := ix.noun(plan.Connect)
	return capFirst(fmt.Sprintf("%snew connections with %s: no measurable difference in %s from plain (%s: every 95%% interval includes 0).", ix.concWords(plan.Connect, x.Concurrency), listWords(names), noun, strings.Join(cis, ", ")))
}

// singleTrialWords says a SingleTrial: the figures and their ratio, and
// that one trial each gives no interval.
func (ix *index) singleTrialWords(f SingleTrial) string {
	x := f.Contrasts[0]
	unit := ix.metricName(plan.Connect)
	var items []string
	for _, y := range f.Contrasts {
		items = append(items, fmt.Sprintf("%s %s against %s %s %s (%s)", y.To, num(y.ToMean, sig3), y.From, num(y.FromMean, sig3), unit, ix.change(plan.Connect, y.Delta, "", true)))
	}
	return capFirst(fmt.Sprintf("%snew connections, one trial each: %s. One trial gives no interval, so this run cannot tell these figures from noise: run --trials 3 or more before drawing a conclusion.", ix.concWords(plan.Connect, x.Concurrency), listWords(items)))
}

// costWords says what a new connection costs with x.To: "costs 2.45 ms
// more with tls1.3 rsa2048 than plain (1 more round trip; ...): 91% fewer
// connections per second".
func (ix *index) costWords(x Contrast) string {
	parts := slices.DeleteFunc([]string{rtWords(x.RoundTrips, "more", "fewer"), cpuWords(x)}, func(s string) bool { return s == "" })
	detail := ""
	if len(parts) > 0 {
		detail = " (" + strings.Join(parts, "; ") + ")"
	}
	return fmt.Sprintf("costs %s more with %s than %s%s: %s", msWords(x.MS), x.To, x.From, detail, ix.change(plan.Connect, x.Delta, "", false))
}

func helloWords(k Kind, f HelloRetry) string {
	var groups []string
	for _, g := range f.Groups {
		if w := groupWords(g); !slices.Contains(groups, w) {
			groups = append(groups, w)
		}
	}
	group := strings.Join(groups, " or ")
	if k == KindRecommendation {
		return fmt.Sprintf("Have clients offer %s as their first key share, or let the server accept theirs: it saves every new TLS 1.3 connection a round trip.", group)
	}
	took := ""
	if !math.IsNaN(f.RoundTrips) {
		took = fmt.Sprintf(": the TLS handshake took %s", pluralFloat(roundRT(f.RoundTrips), "round trip"))
	}
	who := listWords(f.Variants)
	if f.Every {
		who = "every TLS 1.3 variant"
	}
	return fmt.Sprintf("The server answered the TLS 1.3 hello of %s with a HelloRetryRequest for %s%s, one more than TLS 1.3 needs.", who, group, took)
}

func (ix *index) versionWords(f VersionChange) string {
	var b strings.Builder
	if f.Saved >= 1 {
		fmt.Fprintf(&b, "TLS 1.3 instead of 1.2 takes %s fewer per new connection", pluralFloat(f.Saved, "round trip"))
	} else {
		b.WriteString("TLS 1.3 instead of 1.2 saved no round trip here")
	}
	fmt.Fprintf(&b, ": %s", ix.effects(f.Pairs, "tls"))
	if f.Saved >= 1 && f.EvenAt > 0 {
		fmt.Fprintf(&b, "; it took up to %s more local time, which the round trip it saves repays wherever the RTT between client and server exceeds %s", msWords(f.LocalMore), msWords(f.EvenAt))
	}
	if f.At > 0 {
		fmt.Fprintf(&b, " (at %s it saves ≈ %s per connection)", plan.RTTLabel(f.At), msWords(f.SavesAt))
	}
	return b.String() + "."
}

func (ix *index) authWords(f AuthChange) string {
	var parts []string
	for _, p := range f.Pairs {
		context := contextWords(ix.info[p.From], "auth")
		s := context + ", " + ix.outcome(p.Contrast, "", false)
		if !math.IsNaN(p.FromMS) && !math.IsNaN(p.ToMS) {
			s = fmt.Sprintf("%s it takes %s instead of %s: %s", context, msWords(p.ToMS), msWords(p.FromMS), ix.outcome(p.Contrast, "", false))
		}
		parts = append(parts, s)
	}
	text := fmt.Sprintf("Authentication with %s instead of %s: %s", f.Method, f.Ref, strings.Join(parts, "; "))
	if f.TLS != nil {
		than := "about as much as"
		if f.More {
			than = "more than"
		}
		within := ""
		if !f.More {
			within = withinWords(f.Diff)
		}
		text += fmt.Sprintf(": it costs a new connection %s TLS does (%s with %s%s)", than, msWords(f.TLS.MS), f.TLS.To, within)
	}
	return capFirst(text) + "."
}

func (ix *index) tunnelWords(f TunnelCost) string {
	var parts []string
	if x := f.Plain; x != nil {
		if x.Measurable() {
			parts = append(parts, fmt.Sprintf("a new connection costs %s more than plain (%s): %s", msWords(x.MS), rtWords(x.RoundTrips, "more", "fewer"), ix.change(plan.Connect, x.Delta, "", false)))
		} else {
			parts = append(parts, "against plain, "+ix.outcome(*x, "", false))
		}
	}
	if y := f.Versus; y != nil {
		parts = append(parts, "against "+y.From+", "+ix.outcome(*y, "", false))
	}
	setup := ""
	if !math.IsNaN(f.SetupMS) {
		setup = fmt.Sprintf(" (the tunnel itself was set up once, in %s)", msWords(f.SetupMS))
	}
	return capFirst(fmt.Sprintf("%sthrough %s, %s%s", ix.concWords(plan.Connect, f.Concurrency), f.Variant, strings.Join(parts, "; "), setup)) + "."
}

// persistentSetting names the connections of a persistent experiment.
func persistentSetting(e plan.Experiment) string {
	if e == plan.Stream {
		return "Reading a large result (stream)"
	}
	return "On persistent connections (" + string(e) + ")"
}

func (ix *index) persistentSameWords(f PersistentSame) string {
	setting := persistentSetting(f.Experiment)
	protection := "TLS"
	if f.Tunnelled {
		protection = "encryption"
	}
	noun, _ := ix.noun(f.Experiment)
	where := fmt.Sprintf("%s against plain at %s", listWords(f.Variants), listWords(concLabels(f.Concurrencies)))
	if f.Single {
		rng := signed(f.Lo, pct) + "%"
		if pctWords(f.Lo) != pctWords(f.Hi) {
			rng += " to " + signed(f.Hi, pct) + "%"
		}
		return fmt.Sprintf("%s, one trial each, %s changed %s by %s (%s): one trial gives no interval, so this run cannot tell that from noise.", setting, protection, noun, rng, where)
	}
	if !f.Measurable {
		return fmt.Sprintf("%s, %s made no measurable difference in %s (%s: no 95%% interval excludes 0).", setting, protection, noun, where)
	}
	a, b := ix.change(f.Experiment, stats.Delta{Pct: f.Lo}, "", true), ix.change(f.Experiment, stats.Delta{Pct: f.Hi}, "", false)
	if f.Lo < 0 {
		a, b = ix.change(f.Experiment, stats.Delta{Pct: f.Hi}, "", true), ix.change(f.Experiment, stats.Delta{Pct: f.Lo}, "", false)
	}
	a = strings.Fields(a)[0]
	if a == strings.Fields(b)[0] {
		return fmt.Sprintf("%s, %s made %s than plain (%s).", setting, protection, b, where)
	}
	return fmt.Sprintf("%s, %s made %s to %s than plain (%s).", setting, protection, a, b, where)
}

func (ix *index) persistentVariantWords(f PersistentVariant) string {
	setting := persistentSetting(f.Experiment)
	noun, _ := ix.noun(f.Experiment)
	var parts, none, singles []string
	for _, x := range f.Contrasts {
		switch {
		case x.Measurable():
			parts = append(parts, ix.change(f.Experiment, x.Delta, "", len(parts) > 0)+" at "+plan.Label(x.Concurrency))
		case x.Single():
			singles = append(singles, ix.single(x, len(singles) > 0)+" at "+plan.Label(x.Concurrency))
		default:
			none = append(none, plan.Label(x.Concurrency))
		}
	}
	var s string
	switch {
	case len(parts) == 0 && len(none) == 0:
		return fmt.Sprintf("%s, %s against plain: %s.", setting, f.Variant, listWords(singles))
	case len(parts) == 0:
		s = fmt.Sprintf("%s, %s and plain: no measurable difference in %s at %s", setting, f.Variant, noun, listWords(none))
	case len(none) > 0:
		s = fmt.Sprintf("%s, %s made %s than plain, and no measurable difference at %s", setting, f.Variant, listWords(parts), listWords(none))
	default:
		s = fmt.Sprintf("%s, %s made %s than plain", setting, f.Variant, listWords(parts))
	}
	if len(singles) > 0 {
		s += "; " + listWords(singles)
	}
	return s + "."
}

func rttWords(f RTTSetup) string {
	var items []string
	measured := !math.IsNaN(f.Items[0].Measured)
	for _, it := range f.Items {
		rt := words(it.RoundTrips, "more", "round trip")
		if measured {
			items = append(items, fmt.Sprintf("%s with %s (%s; predicted %s)", msWords(it.Measured), it.Variant, rt, msWords(it.Predicted)))
		} else {
			items = append(items, fmt.Sprintf("%s with %s (%s)", msWords(it.Predicted), it.Variant, rt))
		}
	}
	if measured {
		return fmt.Sprintf("At %s RTT (emulated), TLS added %s to a new connection's setup; the round-trip model (round trips × RTT + loopback time) was within %.0f%% of every setup time measured there.",
			plan.RTTLabel(f.RTT), listWords(items), math.Ceil(100*f.Within))
	}
	return fmt.Sprintf("At %s RTT, the round-trip model predicts that TLS adds %s to a new connection's setup.", plan.RTTLabel(f.RTT), listWords(items))
}

func ceilingWords(cl CeilingRow) string {
	ceiling := cl.ConnPerSec()
	lib := ""
	if cl.Library != "" {
		lib = ", " + cl.Library
	}
	if math.IsNaN(cl.Best) {
		return fmt.Sprintf("With %s keys the server's %s can sign for at most %s new TLS connections per second (%s signatures per second per core%s).",
			cl.Key, plural(cl.Cores, "core"), num(ceiling, rate), num(cl.SignPerSec, rate), lib)
	}
	verdict := "signing alone does not limit new connections here"
	if cl.Share() >= 0.7 {
		verdict = "the server's signing speed is what limits new connections"
	}
	return fmt.Sprintf("With %s keys the server made at most %s new TLS connections per second (%s), %s of the %s its %s can sign for (%s per second per core%s): %s.",
		cl.Key, num(cl.Best, rate), cl.BestAt, pctWords(100*cl.Share()), num(ceiling, rate), plural(cl.Cores, "core"), num(cl.SignPerSec, rate), lib, verdict)
}

// effects lists the outcomes of contrasts along one field of their
// variants (omit: "tls", "key", "resume", "auth"), each with the rest of
// its setting: "19% fewer connections per second with rsa2048, no
// measurable difference with ecdsa-p256".
func (ix *index) effects(cs []Contrast, omit string) string {
	var parts []string
	for i, c := range cs {
		s := ix.outcome(c, "", i > 0)
		if context := contextWords(ix.info[c.From], omit); context != "" {
			s += " " + context
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// concWords names a concurrency in a sentence when e has several.
func (ix *index) concWords(e plan.Experiment, c int) string {
	if len(ix.conc[e]) < 2 {
		return ""
	}
	return "At " + plan.Label(c) + ", "
}

// noun names an experiment's main figure in a sentence; count tells
// "more/fewer" (connections) from "higher/lower" (throughput).
func (ix *index) noun(e plan.Experiment) (noun string, count bool) {
	switch ix.metricName(e) {
	case "connections/s":
		return "connections per second", true
	case "queries/s":
		return "queries per second", true
	case "MB/s":
		return "throughput (MB/s)", false
	}
	return "requests per second", true
}

// change says a measurable change in words: "91% fewer connections per
// second", "2.1× the connections per second"; of names what it is
// compared with, if anything. Short leaves the figure's name out, for the
// items of a list after the first: "91% fewer", "2.1×".
func (ix *index) change(e plan.Experiment, d stats.Delta, of string, short bool) string {
	noun, count := ix.noun(e)
	more, fewer := "more", "fewer"
	if !count {
		more, fewer = "higher", "lower"
	}
	var s string
	switch {
	case d.Pct >= 100:
		s = times(1+d.Pct/100) + "×"
		if !short {
			s += " the " + noun
			if of != "" {
				s += " of " + of
			}
		}
		return s
	case d.Pct >= 0:
		s = pctWords(d.Pct) + " " + more
	default:
		s = pctWords(-d.Pct) + " " + fewer
	}
	if !short {
		s += " " + noun
		if of != "" {
			s += " than " + of
		}
	}
	return s
}

// outcome is a change in words: measurable, seen in one trial each, or
// not measurable.
func (ix *index) outcome(c Contrast, of string, short bool) string {
	switch {
	case c.Measurable():
		return ix.change(c.Experiment, c.Delta, of, short)
	case c.Single():
		return ix.single(c, short)
	}
	return ix.none(c, short)
}

// single says a change seen in one pair of trials: both figures and their
// ratio, never "no measurable difference", since one trial cannot show
// that either: "90.8 against 1920 connections/s (95.3% fewer; one trial
// each, no interval)".
func (ix *index) single(c Contrast, short bool) string {
	unit := ""
	if !short {
		unit = " " + ix.metricName(c.Experiment)
	}
	return fmt.Sprintf("%s against %s%s (%s; one trial each, no interval)", num(c.ToMean, sig3), num(c.FromMean, sig3), unit, ix.change(c.Experiment, c.Delta, "", true))
}

// none says that a change is not measurable, with its interval: several
// pairs of trials whose 95% interval includes 0, or none to compare.
func (ix *index) none(c Contrast, short bool) string {
	s := "no measurable difference"
	if !short {
		noun, _ := ix.noun(c.Experiment)
		s += " in " + noun
	}
	if c.Delta.N == 0 {
		return s + " (no pair of trials to compare)"
	}
	return fmt.Sprintf("%s (%s)", s, pctCI(c.Delta))
}

func pctWords(p float64) string { return num(p, pct) + "%" }

// times renders a ratio: "2.41", "21.1", "227".
func times(r float64) string { return num(r, sig3) }

// msWords renders a duration in ms for a sentence.
// withinWords says why two times are "about as much": their difference
// round by round, with its interval where there is one.
func withinWords(d stats.Summary) string {
	if d.N < 2 {
		return "; one round: no interval"
	}
	return fmt.Sprintf("; round by round they differ by %s ±%s ms, a 95%% interval that holds 0", num(d.Mean, millis), num(d.CI95, millis))
}

func msWords(ms float64) string { return num(ms, millis) + " ms" }

// rtWords says a change of round trips: "1 more round trip", "no extra round trip".
func rtWords(d float64, more, less string) string {
	switch {
	case math.IsNaN(d):
		return ""
	case math.Abs(d) < 0.05:
		return "no extra round trip"
	case d > 0:
		return words(roundRT(d), more, "round trip")
	}
	return words(roundRT(-d), less, "round trip")
}

// words is "1 more round trip", "2 fewer round trips", "1.50 more round trips".
func words(n float64, adj, noun string) string {
	s := pluralFloat(n, noun)
	i := strings.Index(s, " ")
	return s[:i] + " " + adj + s[i:]
}

// cpuWords says the change of CPU per connection on both sides.
func cpuWords(c Contrast) string {
	side := func(x float64, who string) string {
		if math.IsNaN(x) {
			return ""
		}
		if x < 0 {
			return msWords(-x) + " less " + who + " CPU"
		}
		return msWords(x) + " more " + who + " CPU"
	}
	parts := slices.DeleteFunc([]string{side(c.ClientCPU, "client"), side(c.ServerCPU, "server")}, func(s string) bool { return s == "" })
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " and ") + " per connection"
}

// phaseWords names a phase in a sentence.
func phaseWords(p string) string {
	switch p {
	case "tcp":
		return "the TCP connect"
	case "startup":
		return "the startup (where the server forks its backend)"
	case "tls-negotiation":
		return "the TLS negotiation"
	case "tls-handshake":
		return "the TLS handshake"
	case "auth":
		return "authentication"
	case "query":
		return "the first query"
	case "request":
		return "the request"
	case "response":
		return "the response"
	case "close":
		return "closing"
	case "greeting":
		return "the server greeting"
	case "tunnel":
		return "opening the tunnel's channel"
	}
	return "the " + p + " phase"
}

// phaseNotes says what the phases named mean where a reader could take
// them for something else: PostgreSQL's startup holds the server's fork,
// and results from before the phase rule have a tls-negotiation phase.
func phaseNotes(names []string) []string {
	var out []string
	if slices.Contains(names, "startup") {
		out = append(out, "startup is PostgreSQL's first round trip after TCP: the SSLRequest and its answer with TLS, the StartupMessage and the first authentication request without. The server forks its backend before it answers, so the fork is in startup in plain and TLS variants alike; with TLS, auth has one round trip more than plain (the StartupMessage's answer).")
	}
	if slices.Contains(names, "tls-negotiation") {
		out = append(out, "tls-negotiation (results from before tlsbench's phase rule): on PostgreSQL the SSLRequest and its answer, which holds the server's backend fork, that plain variants count in auth; on MySQL/MariaDB the SSL request and building the ClientHello, which tls-handshake holds now.")
	}
	return out
}

func capFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func groupWords(g string) string {
	if rest, ok := strings.CutPrefix(g, "CurveP"); ok {
		return "P-" + rest
	}
	return g
}

// listWords joins names as a sentence does: "a", "a and b", "a, b and c".
func listWords(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func concLabels(cs []int) []string {
	var out []string
	for _, c := range cs {
		out = append(out, plan.Label(c))
	}
	return out
}

// contextWords describes a variant by all but one of its fields, for the
// pairs of a comparison along that field: "with rsa2048 at 20ms RTT".
func contextWords(info plan.Variant, omit string) string {
	var parts []string
	if omit != "tls" {
		switch info.TLS {
		case "off":
			parts = append(parts, "without TLS")
		case "auto":
			parts = append(parts, "with TLS")
		default:
			parts = append(parts, "with TLS "+info.TLS)
		}
	}
	with := func(s string) {
		if len(parts) == 0 {
			parts = append(parts, "with "+s)
		} else {
			parts = append(parts, s)
		}
	}
	if omit != "key" && info.Key != "" {
		with(info.Key)
	}
	if omit != "tls" && info.Cipher != "" {
		with(strings.TrimPrefix(info.Cipher, "TLS_"))
	}
	if omit != "group" && info.Group != "" {
		with(info.Group)
	}
	if omit != "resume" && info.Resume {
		with("resumption")
	}
	if omit != "auth" && info.Auth != "" {
		with(info.Auth + " auth")
	}
	if omit != "client-cert" && info.SendsClientCert() {
		with("client cert " + info.ClientCert)
	}
	s := strings.Join(parts, " ")
	if info.RTT != 0 {
		s = strings.TrimSpace(s + " at " + plan.RTTLabel(info.RTT) + " RTT")
	}
	return s
}

// writeFindings writes the findings section of the text report: caveats
// and findings, then recommendations, wrapped for a terminal.
func writeFindings(b *strings.Builder, fs []Finding) {
	b.WriteString("findings (a difference whose 95% interval includes 0 counts as none)\n")
	head := false
	for _, x := range fs {
		if x.Kind == KindRecommendation && !head {
			b.WriteString("recommendations\n")
			head = true
		}
		wrap(b, x.Text, textWidth, "- ", "  ")
	}
}

// textWidth is where the text report wraps sentences.
const textWidth = 100

// wrap writes text in lines of at most width runes (longer words stand
// alone), the first starting with first, the others with rest.
func wrap(b *strings.Builder, text string, width int, first, rest string) {
	line, n := first, utf8.RuneCountInString(first)
	empty := true
	// A figure and its unit stay on one line: "2.45 ms" is one word here.
	var tokens []string
	for _, w := range strings.Fields(text) {
		if k := len(tokens) - 1; k >= 0 && isUnit(w) && strings.ContainsAny(tokens[k][len(tokens[k])-1:], "0123456789") {
			tokens[k] += " " + w
			continue
		}
		tokens = append(tokens, w)
	}
	for _, w := range tokens {
		wn := utf8.RuneCountInString(w)
		if !empty && n+1+wn > width {
			b.WriteString(line + "\n")
			line, n, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			line += " "
			n++
		}
		line += w
		n += wn
		empty = false
	}
	b.WriteString(line + "\n")
}

// isUnit reports whether a word is a unit that follows a figure.
func isUnit(w string) bool {
	for _, u := range []string{"ms", "MB/s", "µs"} {
		if rest, ok := strings.CutPrefix(w, u); ok && strings.Trim(rest, ".,;:)") == "" {
			return true
		}
	}
	return false
}

// pathKind is the --via kind a variant goes through ("" direct or
// unknown).
func (ix *index) pathKind(variant string) string { return ix.info[variant].Route.Kind }

// protected reports whether a variant's connections are encrypted on
// their way to the server: TLS from the client, or a tunnel, a VPN, or a
// pooler that speaks TLS to the server.
func (ix *index) protected(variant string) bool {
	info := ix.info[variant]
	if !info.Plain() {
		return true
	}
	r := info.Route
	switch r.Kind {
	case "":
		return false // direct, or a route the result does not name
	case plan.RouteHAProxy:
		return false // a plain frontend: the proxy alone
	case plan.RoutePgbouncer:
		return plan.PgbouncerOf(r.Route()).ServerTLS != "disable"
	}
	return true // SSH, stunnel, OpenSSH, WireGuard encrypt the hop
}
