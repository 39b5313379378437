//! Text tables as talosctl prints them. `tabwriter` is Go's `text/tabwriter` with talosctl's
//! settings (minwidth 0, tabwidth 0, padding 3, pad with spaces, no flags): tab-terminated
//! cells are aligned in column blocks, each column as wide as its widest cell plus 3, and the
//! text after a line's last tab is not padded. `columnize` is ryanuber/columnize's
//! `SimpleFormat` (`processes` uses it): cells split at `|`, trimmed, joined by two spaces.

/// Go's `text/tabwriter` output for `text` (cells separated by `\t`, lines by `\n`).
pub fn tabwriter(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut widths = Vec::new();
    let mut out = String::new();
    format(&lines, &mut widths, 0, lines.len(), &mut out);
    out
}

/// Rows of cells as talosctl's tables print them: cells joined by tabs, one line per row.
pub fn table(rows: &[Vec<String>]) -> String {
    let text: String = rows.iter().map(|r| r.join("\t") + "\n").collect();
    tabwriter(&text)
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Go's `Writer.format`: lays out lines `line0..line1` from column `widths.len()` on.
fn format(
    lines: &[Vec<&str>],
    widths: &mut Vec<usize>,
    mut line0: usize,
    line1: usize,
    out: &mut String,
) {
    let column = widths.len();
    let mut this = line0;
    while this < line1 {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        // A cell in this column: lay out the lines before the block, then the block.
        write_lines(lines, widths, line0, this, out);
        line0 = this;
        let mut w = 0;
        while this < line1 && column + 1 < lines[this].len() {
            w = w.max(width(lines[this][column]) + 3);
            this += 1;
        }
        widths.push(w);
        format(lines, widths, line0, this, out);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, widths, line0, line1, out);
}

fn write_lines(
    lines: &[Vec<&str>],
    widths: &[usize],
    line0: usize,
    line1: usize,
    out: &mut String,
) {
    for (i, line) in lines.iter().enumerate().take(line1).skip(line0) {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if j < widths.len() && j + 1 < line.len() {
                out.extend(std::iter::repeat_n(
                    ' ',
                    widths[j].saturating_sub(width(cell)),
                ));
            }
        }
        // The last line has no newline (the text after the final `\n`).
        if i + 1 < lines.len() {
            out.push('\n');
        }
    }
}

/// ryanuber/columnize `SimpleFormat`: each line split at `|`, cells trimmed, every column but
/// the last left-aligned to its widest cell and followed by two spaces; no final newline.
pub fn columnize(lines: &[String]) -> String {
    let rows: Vec<Vec<&str>> = lines
        .iter()
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    let mut widths: Vec<usize> = Vec::new();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            if i >= widths.len() {
                widths.push(0);
            }
            widths[i] = widths[i].max(width(c));
        }
    }
    let mut out = String::new();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            out.push_str(c);
            if i + 1 < r.len() {
                out.extend(std::iter::repeat_n(' ', widths[i] - width(c)));
                out.push_str("  ");
            }
        }
        out.push('\n');
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_widest_cell_plus_three_and_last_cell_unpadded() {
        let t = tabwriter("NODE\tNAME\n10.5.0.2\t.\n10.5.0.2\tetc\n");
        assert_eq!(t, "NODE       NAME\n10.5.0.2   .\n10.5.0.2   etc\n");
        // Widths count characters, not bytes.
        let t = tabwriter("ID\tPID\n└─ kube\t1\nx\t22\n");
        assert_eq!(t, "ID        PID\n└─ kube   1\nx         22\n");
        // A trailing tab makes the last cell a padded column; an empty cell is all padding.
        assert_eq!(
            tabwriter("a\tb\t\n\tlonger\t\n"),
            "a   b        \n    longer   \n"
        );
    }

    #[test]
    fn column_blocks_end_where_lines_lack_the_column() {
        // Go lays out consecutive lines that have a cell in a column as one block.
        let t = tabwriter("NODE\t1.1.1.1\nID\tapid\nEVENTS\t[Running]: ok (1s ago)\n\t[Preparing]: x (2s ago)\nsolo\nlonger-key\tv\n");
        assert_eq!(
            t,
            "NODE     1.1.1.1\nID       apid\nEVENTS   [Running]: ok (1s ago)\n         [Preparing]: x (2s ago)\nsolo\nlonger-key   v\n"
        );
        assert_eq!(
            table(&[vec!["A".into(), "B".into()], vec!["ccc".into(), "d".into()]]),
            "A     B\nccc   d\n"
        );
    }

    #[test]
    fn columnize_trims_and_glues_with_two_spaces() {
        let lines = vec![
            "NODE | PID | COMMAND".to_string(),
            "  10.5.0.2 |      1 | /sbin/init".to_string(),
        ];
        assert_eq!(
            columnize(&lines),
            "NODE      PID  COMMAND\n10.5.0.2  1    /sbin/init"
        );
    }
}
