package plugin

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// RenderStatus writes s for a terminal of 80 columns.
func RenderStatus(w io.Writer, s Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "EtcdCluster %s/%s: %d members, etcd %s\n\n", s.Namespace, s.Name, s.Size, orDash(s.Version))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range s.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason))
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tROLE\tHEALTHY\tVERSION\tNODE\tDB\tIN USE\tLAG\tALARMS")
	for _, m := range sortedMembers(s.Members) {
		healthy := "no"
		if m.Healthy {
			healthy = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.Name, m.Role, healthy, orDash(m.Version), orDash(m.Node),
			size(m.DBSize), size(m.DBSizeInUse), m.RaftIndexLag, orDash(strings.Join(m.Alarms, ",")))
	}
	_ = tw.Flush()
	b.WriteString("\n")
	fmt.Fprintf(&b, "Now: %s\n", wrap(orNothing(s.Doing), 75, "     "))
	fmt.Fprintf(&b, "Last backup: %s\n", backupLine(s.LastBackup))
	fmt.Fprintf(&b, "Auth: %s\n", wrap(authLine(s.Auth), 75, "      "))
	b.WriteString("Auto Pilot:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range s.AutoPilot {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, orDash(f.Setting), clip(f.State, 36))
	}
	_ = tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// authLine describes etcd's authentication in one line.
func authLine(a Auth) string {
	switch {
	case a.Enabled == nil && !a.Wanted:
		return "off"
	case a.Enabled == nil:
		return "asked for, etcd not asked yet"
	case *a.Enabled && a.Wanted:
		return "on; root role: " + strings.Join(a.RootUsers, ", ")
	case *a.Enabled:
		return "on, turning off"
	case a.Wanted:
		return "off, turning on"
	}
	return "off"
}

// orNothing is what the operator is doing, or that it has nothing to do.
func orNothing(doing string) string {
	if doing == "" {
		return "nothing: the cluster runs as its spec asks"
	}
	return doing
}

// backupLine describes the last backup in one line.
func backupLine(b *LastBackup) string {
	if b == nil {
		return "none finished"
	}
	out := fmt.Sprintf("%s, %s ago, ", b.Name, age(secondsOf(b.AgeSeconds)))
	if b.Succeeded {
		out += "succeeded"
	} else {
		out += "failed (" + b.Reason + ")"
	}
	switch b.Verified {
	case "True":
		out += ", verified"
	case "False":
		out += ", verification failed"
	case "Unknown":
		out += ", verification not conclusive"
	}
	return out
}

// wrap breaks s into lines of at most width runes, indenting the lines after the first.
func wrap(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n"+indent)
}

// clip shortens s to n runes, ending in "..." when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

// secondsOf is n seconds.
func secondsOf(n int64) time.Duration { return time.Duration(n) * time.Second }
