//! Names llmprof does not control, in report.html (docs/security.md): an input file named like a
//! URL scheme and a sweep job folder named like one become relative, percent-encoded links to
//! their files, never `javascript:` or `data:` URLs, and no event handler appears; checked on the
//! page's text and, where Chromium is installed (CI), on the DOM the browser builds from it.
use crate::front_end::report::{browse, chromium, recorded, report};
use std::path::Path;

const HOSTILE: &str = "javascript:alert(1)";

/// Every `href`/`src` value of `html`'s tags, and whether any tag has an `on…` handler
/// attribute. Attributes are read in order, each with its quoted value, so text inside a value
/// (an escaped `onerror=` in a title) is not taken for an attribute.
fn urls_and_handlers(html: &str) -> (Vec<String>, bool) {
    let tag = regex::Regex::new(r"<[a-zA-Z][a-zA-Z0-9-]*([^>]*)>").unwrap();
    let attr = regex::Regex::new(r#"\s([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?"#)
        .unwrap();
    // Scripts and styles are code and CSS, not tags (the page embeds plotly.js).
    let code = regex::Regex::new(r"(?is)<(script|style)\b[^>]*>.*?</(script|style)>").unwrap();
    let html = code.replace_all(html, "<$1>");
    let (mut urls, mut handler) = (Vec::new(), false);
    for t in tag.captures_iter(&html) {
        for a in attr.captures_iter(&t[1]) {
            let name = a[1].to_ascii_lowercase();
            let value = a
                .get(2)
                .or(a.get(3))
                .or(a.get(4))
                .map_or("", |m| m.as_str());
            if name.starts_with("on") {
                handler = true;
            }
            if name == "href" || name == "src" {
                urls.push(value.to_string());
            }
        }
    }
    (urls, handler)
}

fn assert_links_are_data(html: &str, what: &str) {
    let (urls, handlers) = urls_and_handlers(html);
    assert!(!handlers, "{what}: an event handler attribute");
    for u in &urls {
        let lower = u.to_ascii_lowercase();
        assert!(
            !lower.contains("javascript:") && !lower.starts_with("data:"),
            "{what}: {u}"
        );
        assert!(
            u.starts_with("./") || u.starts_with('#'),
            "{what}: not relative: {u}"
        );
    }
}

fn write(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
}

#[test]
fn hostile_input_and_job_names_become_relative_links() {
    // An infer run's prediction for an input named like a scheme, with its two per-page files.
    let run = recorded("stage1-cpu", "report-hostile");
    let line = serde_json::json!({
        "name": HOSTILE, "image": format!("/data/{HOSTILE}.png"), "prompt_tokens": 10,
        "output_tokens": 3, "hit_eos": true, "elements": [], "text": "<img src=x onerror=alert(1)>",
    });
    write(&run.join("predictions.jsonl"), &format!("{line}\n"));
    let status = std::fs::read_to_string(run.join("status.json")).unwrap();
    write(
        &run.join("status.json"),
        &status.replace("\"command\": \"stage1\"", "\"command\": \"infer\""),
    );
    write(&run.join(format!("{HOSTILE}.mmd")), "# page");
    std::fs::write(run.join(format!("{HOSTILE}.boxes.png")), b"\x89PNG").unwrap();
    let page = report(&run);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("href=\"./javascript%3Aalert%281%29.mmd\""),
        "the markdown link is the encoded file name"
    );
    assert!(!html.contains("<img src=x"), "prediction text is escaped");
    assert_links_are_data(&html, "run page");

    // A sweep whose job folder is named like a scheme.
    let sweep = recorded("sweep-cpu", "report-hostile-sweep");
    std::fs::rename(sweep.join("3"), sweep.join(HOSTILE)).unwrap();
    let page = report(&sweep);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_links_are_data(&html, "sweep page");

    let Some(chromium) = chromium() else {
        if crate::support::services_required() {
            panic!("CI (or .ci/run's marker target/ci-services-required) asks for it but chromium is not installed: .ci/run installs it");
        }
        eprintln!("\n!!!!!!!! SKIPPED the browser half of hostile_input_and_job_names_become_relative_links: chromium is not installed !!!!!!!!\n");
        return;
    };
    for p in [run.join("report.html"), sweep.join("report.html")] {
        let (dom, _) = browse(&chromium, &p, &["--dump-dom".into()]);
        assert!(dom.contains("</html>"), "{}: no DOM dumped", p.display());
        assert_links_are_data(&dom, &p.display().to_string());
    }
}
