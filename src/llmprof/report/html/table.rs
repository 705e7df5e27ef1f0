//! The table widget of report.html: sortable by any column (click a header), filterable by a
//! text box, long names shortened with the full name on hover (and searchable).
use super::page::esc;

/// One column: its title and whether it sorts as a number (right-aligned).
pub struct Column {
    pub title: String,
    pub numeric: bool,
}

/// A text column.
pub fn text(title: &str) -> Column {
    Column {
        title: title.into(),
        numeric: false,
    }
}

/// A numeric column.
pub fn num(title: &str) -> Column {
    Column {
        title: title.into(),
        numeric: true,
    }
}

/// One cell: what is shown, what it sorts by, and the full text on hover.
#[derive(Default, Clone)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
    pub title: Option<String>,
    /// Wrap long text instead of keeping it on one line.
    pub wrap: bool,
    /// Raw HTML instead of text (links); `text` is then already escaped.
    pub html: bool,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Self {
        Cell {
            text: s.into(),
            ..Cell::default()
        }
    }

    /// A number shown with `decimals` digits ("—" when absent), sorted by its value.
    pub fn num(v: Option<f64>, decimals: usize) -> Self {
        Cell {
            text: v
                .map(|v| format!("{v:.decimals$}"))
                .unwrap_or_else(|| "—".into()),
            sort: v,
            ..Cell::default()
        }
    }

    /// `short` shown, `full` on hover and in the filter.
    pub fn named(short: impl Into<String>, full: impl Into<String>) -> Self {
        Cell {
            text: short.into(),
            title: Some(full.into()),
            ..Cell::default()
        }
    }

    /// A link to `relative`, a path inside the report's folder (see [`href`]).
    pub fn link(relative: &str, label: &str) -> Self {
        Cell {
            text: format!("<a href=\"{}\">{}</a>", href(relative), esc(label)),
            html: true,
            ..Cell::default()
        }
    }

    pub fn wrapped(mut self) -> Self {
        self.wrap = true;
        self
    }
}

/// A table with a filter box above it.
pub struct Table {
    pub id: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// A CSS class per row (e.g. "failed"), when given.
    pub row_classes: Vec<Option<String>>,
}

impl Table {
    pub fn new(id: &str, columns: Vec<Column>) -> Self {
        Table {
            id: id.into(),
            columns,
            rows: Vec::new(),
            row_classes: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
        self.row_classes.push(None);
    }

    pub fn push_with_class(&mut self, row: Vec<Cell>, class: &str) {
        self.rows.push(row);
        self.row_classes.push(Some(class.into()));
    }

    pub fn html(&self) -> String {
        let id = esc(&self.id);
        let mut s = format!(
            "<input class=\"table-filter\" type=\"search\" placeholder=\"filter rows…\" data-table=\"{id}\">\n<div class=\"table-wrap\"><table class=\"data\" id=\"{id}\">\n<thead><tr>"
        );
        for c in &self.columns {
            let class = if c.numeric { " class=\"num\"" } else { "" };
            s.push_str(&format!("<th{class}>{}</th>", esc(&c.title)));
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for (row, class) in self.rows.iter().zip(&self.row_classes) {
            let search: Vec<&str> = row.iter().filter_map(|c| c.title.as_deref()).collect();
            let class = class
                .as_ref()
                .map(|c| format!(" class=\"{}\"", esc(c)))
                .unwrap_or_default();
            s.push_str(&format!(
                "<tr{class} data-search=\"{}\">",
                esc(&search.join(" "))
            ));
            for (cell, col) in row.iter().zip(&self.columns) {
                let mut classes = Vec::new();
                if col.numeric {
                    classes.push("num");
                }
                if cell.wrap {
                    classes.push("wrap");
                }
                let mut attrs = String::new();
                if !classes.is_empty() {
                    attrs.push_str(&format!(" class=\"{}\"", classes.join(" ")));
                }
                if let Some(v) = cell.sort {
                    attrs.push_str(&format!(" data-sort=\"{v}\""));
                }
                if let Some(t) = &cell.title {
                    attrs.push_str(&format!(" title=\"{}\"", esc(t)));
                }
                let body = if cell.html {
                    cell.text.clone()
                } else {
                    esc(&cell.text)
                };
                s.push_str(&format!("<td{attrs}>{body}</td>"));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table></div>\n");
        s
    }
}

/// A two-column key/value table (no sorting, no filter).
pub fn key_values(rows: &[(String, String)]) -> String {
    let mut s = String::from("<table class=\"kv\">\n");
    for (k, v) in rows {
        s.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            esc(k),
            esc(v)
        ));
    }
    s.push_str("</table>\n");
    s
}

/// The `href` of a path relative to the page (an artifact the report names): every segment
/// percent-encoded but for letters, digits and `-._~`, joined with `/`, after `./`. Names come
/// from inputs and job folders, which llmprof does not control (docs/security.md): encoded, a
/// name such as `javascript:alert(1)` stays a file name (`./javascript%3Aalert%281%29`), never a
/// scheme, and `#`, `?`, `%` and spaces stay part of the name.
pub fn href(relative: &str) -> String {
    let mut out = String::from("./");
    for (i, segment) in relative.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in segment.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod href_tests {
    use super::href;

    #[test]
    fn hrefs_are_relative_paths_never_schemes() {
        assert_eq!(href("report.html"), "./report.html");
        assert_eq!(href("3/report.html"), "./3/report.html");
        assert_eq!(
            href("javascript:alert(1).mmd"),
            "./javascript%3Aalert%281%29.mmd"
        );
        assert_eq!(href("a b#c?d%.png"), "./a%20b%23c%3Fd%25.png");
        assert_eq!(href("\"><script>"), "./%22%3E%3Cscript%3E");
        assert_eq!(href("é.mmd"), "./%C3%A9.mmd");
    }
}
