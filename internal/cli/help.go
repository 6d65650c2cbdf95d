package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sectionKey is the flag annotation that puts a flag under a help
// section (registerTable; kube's own flags).
const sectionKey = "tlsbench-section"

// helpWidth is where --help wraps a flag's text.
const helpWidth = 100

// runUsage writes a measuring command's usage: its flags under the
// sections of options, only those the command lists, each with the
// default plan uses for it.
func runUsage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.Runnable() {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s [command]\n\nAvailable Commands:\n", c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	bySection := map[string][]*pflag.Flag{}
	width := 0
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		sec := secOther
		if a := f.Annotations[sectionKey]; len(a) > 0 {
			sec = a[0]
		} else if o, ok := borrowed(f); ok {
			sec = o.section
		}
		bySection[sec] = append(bySection[sec], f)
		width = max(width, len(flagLeft(f)))
	})
	for _, sec := range sections {
		if len(bySection[sec]) == 0 {
			continue
		}
		// In the table's order (the most used first); the others, and
		// the section Other, alphabetical.
		if sec != secOther {
			slices.SortStableFunc(bySection[sec], func(a, b *pflag.Flag) int { return optionIndex(a) - optionIndex(b) })
		}
		fmt.Fprintf(&b, "\n%s:\n", sec)
		for _, f := range bySection[sec] {
			left := flagLeft(f)
			_, text := pflag.UnquoteUsage(f) // a `NAME` in it names the value
			if d := shownDefault(f); d != "" {
				text += " (default " + d + ")"
			}
			b.WriteString(left + strings.Repeat(" ", width-len(left)+3))
			b.WriteString(wrap(text, helpWidth-width-3, width+3) + "\n")
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// optionIndex is f's place in its options table (registerTable), after
// them if it is not one.
func optionIndex(f *pflag.Flag) int {
	if a := f.Annotations[orderKey]; len(a) > 0 {
		i, _ := strconv.Atoi(a[0])
		return i
	}
	if _, ok := borrowed(f); ok {
		return slices.IndexFunc(options, func(o runOption) bool { return o.flag == f.Name })
	}
	return math.MaxInt16
}

// borrowed is the run option whose name f, a flag of a command with no
// table (prepare, wire, merge), takes: it is shown as that option is.
func borrowed(f *pflag.Flag) (runOption, bool) {
	if len(f.Annotations[sectionKey]) > 0 {
		return runOption{}, false
	}
	o, ok := optionByFlag[f.Name]
	return o, ok
}

// flagLeft is the flag's spelling and the kind of value it takes.
func flagLeft(f *pflag.Flag) string {
	left := "      --" + f.Name
	if f.Shorthand != "" {
		left = "  -" + f.Shorthand + ", --" + f.Name
	}
	varname, _ := pflag.UnquoteUsage(f)
	if v, ok := map[string]string{"durationSlice": "durations", "stringArray": "string"}[varname]; ok {
		varname = v // stringArray: repeat the flag
	}
	if varname != "" {
		left += " " + varname
	}
	return left
}

// shownDefault is the default --help shows: plan's for an option of a
// table (see tableDefaults), else the flag's own unless it is its type's
// zero.
func shownDefault(f *pflag.Flag) string {
	if len(f.Annotations[orderKey]) > 0 {
		return f.DefValue
	}
	if o, ok := borrowed(f); ok && o.def == nil {
		return ""
	} else if ok {
		return f.DefValue
	}
	switch f.DefValue {
	case "", "0", "0s", "[]", "false":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// wrap breaks text into lines of at most width, the later ones indented
// by indent.
func wrap(text string, width, indent int) string {
	width = max(width, 40)
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
