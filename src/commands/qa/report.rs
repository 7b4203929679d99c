//! qa's outputs: the JSON (`--json`) and the one-file HTML report (`-o`), which opens
//! offline: thumbnails are `data:` URIs, no script, no link outside the file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::commands::html::html_escape;

use super::browse::Replayed;
use super::compare::Pair;
use super::reasons::Reason;

/// The whole check, as `--json` writes it.
#[derive(Debug, Serialize)]
pub struct QaJson {
    pub crawl: String,
    /// Requests answered / requests made, over every page (1 when none was made).
    pub score: f64,
    pub pages_checked: usize,
    pub requests: usize,
    pub answered: usize,
    /// Pages cut at the timeout.
    pub timed_out: usize,
    /// Missing requests (page and URL) by reason.
    pub missing_by_reason: BTreeMap<&'static str, usize>,
    /// Worst first.
    pub pages: Vec<PageJson>,
    /// With `--compare`: most changed first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Vec<CompareJson>>,
}

#[derive(Debug, Serialize)]
pub struct PageJson {
    pub url: String,
    pub site: String,
    pub score: f64,
    pub requests: usize,
    pub answered: usize,
    pub text_length: usize,
    pub timed_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub missing: Vec<MissingJson>,
}

#[derive(Debug, Serialize)]
pub struct MissingJson {
    pub url: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: Reason,
}

#[derive(Debug, Serialize)]
pub struct CompareJson {
    pub url: String,
    /// Share of the thumbnail's pixels that differ, 0..=1.
    pub pixel_diff: f64,
    /// Lines of text added or removed.
    pub text_diff: usize,
    pub score: f64,
    pub other_score: f64,
}

/// Pages worst first: lowest score, then most missing, then by URL.
pub(super) fn worst_first(pages: &mut [Replayed]) {
    pages.sort_by(|a, b| {
        a.score()
            .total_cmp(&b.score())
            .then((b.asked.len() - b.answered()).cmp(&(a.asked.len() - a.answered())))
            .then(a.url.cmp(&b.url))
    });
}

/// The JSON of `pages` (already worst first) and the compared pairs.
pub(super) fn json(crawl: &str, pages: &[Replayed], pairs: Option<&[Pair]>) -> QaJson {
    let requests: usize = pages.iter().map(|p| p.asked.len()).sum();
    let answered: usize = pages.iter().map(Replayed::answered).sum();
    let mut by_reason = BTreeMap::new();
    for r in Reason::ALL {
        by_reason.insert(r.name(), 0);
    }
    for a in pages.iter().flat_map(|p| &p.asked) {
        if let Some(r) = a.missing {
            *by_reason.entry(r.name()).or_insert(0) += 1;
        }
    }
    QaJson {
        crawl: crawl.to_string(),
        score: if requests == 0 {
            1.0
        } else {
            answered as f64 / requests as f64
        },
        pages_checked: pages.len(),
        requests,
        answered,
        timed_out: pages.iter().filter(|p| p.timed_out).count(),
        missing_by_reason: by_reason,
        pages: pages.iter().map(page_json).collect(),
        compare: pairs.map(|ps| {
            ps.iter()
                .map(|p| CompareJson {
                    url: p.url.clone(),
                    pixel_diff: p.pixel_diff,
                    text_diff: p.text_diff,
                    score: p.this.score(),
                    other_score: p.other.score(),
                })
                .collect()
        }),
    }
}

fn page_json(p: &Replayed) -> PageJson {
    PageJson {
        url: p.url.clone(),
        site: p.site.clone(),
        score: p.score(),
        requests: p.asked.len(),
        answered: p.answered(),
        text_length: p.text_length,
        timed_out: p.timed_out,
        error: p.error.clone(),
        missing: p
            .asked
            .iter()
            .filter_map(|a| {
                Some(MissingJson {
                    url: a.url.clone(),
                    kind: a.kind.clone(),
                    reason: a.missing?,
                })
            })
            .collect(),
    }
}

fn thumb(png: Option<&[u8]>) -> String {
    match png {
        Some(b) => format!(
            "<img class=thumb alt=\"thumbnail\" src=\"data:image/png;base64,{}\">",
            data_encoding::BASE64.encode(b)
        ),
        None => "<div class=\"thumb none\">no picture</div>".to_string(),
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:6px;\
vertical-align:top;text-align:left}.thumb{width:160px;border:1px solid #ccc}\
.none{height:128px;background:#eee;text-align:center;line-height:128px;color:#888}\
.bad{color:#b00}.good{color:#070}code{font-size:12px;word-break:break-all}\
pre{background:#f6f6f6;padding:1em;overflow:auto;max-height:40em}";

/// The HTML report of `json`, with the thumbnails of `pages` (in the same order).
pub(super) fn html(json: &QaJson, pages: &[Replayed], pairs: Option<&[Pair]>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=utf-8><title>qa: {c}</title>\
         <style>{STYLE}</style></head><body><h1>What the archive of {c} misses</h1>\
         <p id=score>Whole crawl: <b>{score:.1}%</b> of {req} requests answered from the \
         archive ({ans}), over {n} pages; {to} cut at the timeout.</p>",
        c = html_escape(&json.crawl),
        score = json.score * 100.0,
        req = json.requests,
        ans = json.answered,
        n = json.pages_checked,
        to = json.timed_out,
    );
    if let Some(pairs) = pairs {
        compare_section(&mut h, pairs);
    }
    pages_section(&mut h, pages);
    by_reason_section(&mut h, pages);
    by_site_section(&mut h, pages);
    let text = serde_json::to_string_pretty(json).unwrap_or_default();
    let _ = writeln!(
        h,
        "<h2>JSON</h2><details><summary>the same, as <code>--json</code> writes it</summary>\
         <pre id=json>{}</pre></details></body></html>",
        html_escape(&text)
    );
    h
}

fn pages_section(h: &mut String, pages: &[Replayed]) {
    h.push_str("<h2>Pages, worst first</h2><table><tr><th>page</th><th>score</th><th>what is missing</th></tr>");
    for p in pages {
        let class = if p.score() < 1.0 { "bad" } else { "good" };
        let _ =
            write!(
            h,
            "<tr class=page><td>{}<br><code>{}</code></td><td class={class}>{:.1}%<br>{} of {} \
             answered<br>{} characters of text{}{}</td><td><ul>",
            thumb(p.thumbnail.as_deref()),
            html_escape(&p.url),
            p.score() * 100.0,
            p.answered(),
            p.asked.len(),
            p.text_length,
            if p.timed_out { "<br>cut at the timeout" } else { "" },
            p.error
                .as_deref()
                .map(|e| format!("<br>error: {}", html_escape(e)))
                .unwrap_or_default(),
        );
        for a in &p.asked {
            if let Some(r) = a.missing {
                let _ = write!(
                    h,
                    "<li><code>{}</code> ({}, {})</li>",
                    html_escape(&a.url),
                    html_escape(&a.kind),
                    r.name()
                );
            }
        }
        h.push_str("</ul></td></tr>");
    }
    h.push_str("</table>");
}

/// Each missing URL once per group, with the number of pages that wanted it.
fn grouped<'a, K: Ord>(
    pages: &'a [Replayed],
    key: impl Fn(&'a Replayed, Reason) -> K,
) -> BTreeMap<K, BTreeMap<(&'a str, Reason), usize>> {
    let mut groups: BTreeMap<K, BTreeMap<(&str, Reason), usize>> = BTreeMap::new();
    for p in pages {
        for a in &p.asked {
            if let Some(r) = a.missing {
                *groups
                    .entry(key(p, r))
                    .or_default()
                    .entry((a.url.as_str(), r))
                    .or_insert(0) += 1;
            }
        }
    }
    groups
}

fn by_reason_section(h: &mut String, pages: &[Replayed]) {
    h.push_str("<h2>Missing, by reason</h2>");
    let groups = grouped(pages, |_, r| r);
    if groups.is_empty() {
        h.push_str("<p>Nothing is missing: the archive answered every request.</p>");
    }
    for (reason, urls) in groups {
        let _ = write!(
            h,
            "<h3 id=\"reason-{n}\">{n}: {} ({} URLs)</h3><ul>",
            reason.explain(),
            urls.len(),
            n = reason.name()
        );
        for ((url, _), n) in urls {
            let _ = write!(h, "<li><code>{}</code>: {n} pages</li>", html_escape(url));
        }
        h.push_str("</ul>");
    }
}

fn by_site_section(h: &mut String, pages: &[Replayed]) {
    h.push_str("<h2>Missing, by site of the page</h2>");
    for (site, urls) in grouped(pages, |p, _| p.site.as_str()) {
        let _ = write!(
            h,
            "<h3>{} ({} URLs)</h3><ul>",
            html_escape(site),
            urls.len()
        );
        for ((url, reason), n) in urls {
            let _ = write!(
                h,
                "<li><code>{}</code> ({}): {n} pages</li>",
                html_escape(url),
                reason.name()
            );
        }
        h.push_str("</ul>");
    }
}

fn compare_section(h: &mut String, pairs: &[Pair]) {
    h.push_str(
        "<h2>Compared with the other crawl, most changed first</h2><table><tr><th>page</th>\
         <th>this crawl</th><th>the other</th><th>change</th></tr>",
    );
    for p in pairs {
        let _ = write!(
            h,
            "<tr class=pair><td><code>{}</code></td><td>{}</td><td>{}</td><td>{:.1}% of the \
             pixels<br>{} lines of text</td></tr>",
            html_escape(&p.url),
            thumb(p.this.thumbnail.as_deref()),
            thumb(p.other.thumbnail.as_deref()),
            p.pixel_diff * 100.0,
            p.text_diff
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::super::browse::Asked;
    use super::*;

    fn page(url: &str, asked: Vec<Asked>) -> Replayed {
        Replayed {
            url: url.into(),
            site: "http://h".into(),
            path: "-".into(),
            asked,
            text_length: 3,
            text: "abc".into(),
            thumbnail: None,
            timed_out: false,
            error: None,
        }
    }

    #[test]
    fn the_json_scores_the_whole_crawl_and_the_html_escapes_urls() {
        let asked = |u: &str, missing| Asked {
            url: u.into(),
            kind: "image".into(),
            missing,
        };
        let mut pages = vec![
            page("http://h/", vec![asked("http://h/a.png", None)]),
            page(
                "http://h/<b>",
                vec![
                    asked("http://h/b.png", None),
                    asked("http://h/c.json", Some(Reason::NotDiscovered)),
                ],
            ),
        ];
        worst_first(&mut pages);
        let j = json("c", &pages, None);
        assert_eq!(j.pages[0].url, "http://h/<b>");
        assert!((j.score - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(j.missing_by_reason["not-discovered"], 1);
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["pages"][0]["missing"][0]["reason"], "not-discovered");
        assert_eq!(v["pages"][0]["missing"][0]["type"], "image");
        assert_eq!(v["pages"][1]["score"], 1.0);
        assert!(v.get("compare").is_none());
        let h = html(&j, &pages, None);
        assert!(h.contains("http://h/&lt;b&gt;") && !h.contains("http://h/<b>"));
        assert!(h.contains("id=\"reason-not-discovered\""));
    }
}
