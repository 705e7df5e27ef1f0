//! The page skeleton of report.html: head, styles, navigation, sections, the embedded plotly.js
//! and the page script (charts, tables, error capture). Everything is inlined: the file opens
//! from disk with no network.
use plotly::Plot;

const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");

/// One titled part of the page.
pub struct Section {
    pub id: String,
    pub title: String,
    pub body: String,
}

impl Section {
    pub fn new(id: &str, title: &str, body: String) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            body,
        }
    }
}

/// A whole page: a title line, banners (warnings shown above everything) and sections.
pub struct Page {
    pub title: String,
    pub subtitle: String,
    pub banners: Vec<String>,
    pub sections: Vec<Section>,
}

/// HTML-escapes text for element content and quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A paragraph saying why a section has nothing to show.
pub fn no_data(why: &str) -> String {
    format!("<p class=\"no-data\">No data: {}</p>\n", esc(why))
}

/// A chart: an empty `div.chart` the page script fills from the JSON figure beside it. The JSON
/// is escaped so that no string in it can close the script element.
pub fn chart(id: &str, plot: &Plot) -> String {
    let json = plot
        .to_json()
        .replace("</", "<\\/")
        .replace("<!--", "<\\u0021--");
    format!(
        "<div class=\"chart\" id=\"{id}\"></div>\n<script type=\"application/json\" id=\"{id}-data\">{json}</script>\n"
    )
}

/// plotly.js as the `plotly` crate embeds it (its `plotly_embed_js` feature), without the
/// MathJax bundle the crate appends (no chart here uses LaTeX).
pub fn plotly_js() -> String {
    let sources = Plot::offline_js_sources();
    let body = sources
        .split_once('>')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    match body.find("</script>") {
        Some(end) => body[..end].to_string(),
        None => body.to_string(),
    }
}

impl Page {
    pub fn render(&self) -> String {
        let mut html = String::with_capacity(5 << 20);
        html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        html.push_str(&format!("<title>{}</title>\n", esc(&self.title)));
        html.push_str(&format!("<style>\n{CSS}</style>\n</head>\n<body>\n"));
        html.push_str("<nav>\n");
        for s in &self.sections {
            html.push_str(&format!(
                "<a href=\"#{}\">{}</a>\n",
                esc(&s.id),
                esc(&s.title)
            ));
        }
        html.push_str("</nav>\n<main>\n");
        html.push_str(&format!(
            "<h1>{}</h1>\n<p class=\"subtitle\">{}</p>\n",
            esc(&self.title),
            esc(&self.subtitle)
        ));
        for b in &self.banners {
            html.push_str(&format!("<div class=\"banner\">{}</div>\n", esc(b)));
        }
        for s in &self.sections {
            html.push_str(&format!(
                "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n",
                esc(&s.id),
                esc(&s.title),
                s.body
            ));
        }
        html.push_str("<pre id=\"script-errors\" hidden></pre>\n</main>\n");
        html.push_str("<script>\n");
        html.push_str(&plotly_js());
        html.push_str("\n</script>\n<script>\n");
        html.push_str(JS);
        html.push_str("</script>\n</body>\n</html>\n");
        html
    }
}
