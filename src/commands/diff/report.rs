//! The diff report rendered as text, JSON or HTML (with replay links into pywb and, for changed
//! pages, what changed on them).

use std::io::{self, Write};

use super::cdxj::{Capture, Crawl};
use super::compare::{Counts, Outcome, Spool};
use super::pages;
use crate::commands::html::html_escape;

pub(super) fn render_text(
    old: &Crawl,
    new: &Crawl,
    o: Outcome,
    all: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = o.total;
    writeln!(out, "archiver diff")?;
    writeln!(out, "  old: {}", old.label)?;
    writeln!(out, "  new: {}", new.label)?;
    writeln!(
        out,
        "added {}, removed {}, changed {}, unchanged {}, status changes {}",
        t.added, t.removed, t.changed, t.unchanged, t.status_changes
    )?;
    writeln!(out, "\nper host:")?;
    let width = o.hosts.keys().map(|h| h.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "  {:width$}  {:>9} {:>9} {:>9} {:>9} {:>9}",
        "host", "added", "removed", "changed", "unchanged", "status"
    )?;
    for (host, c) in &o.hosts {
        writeln!(
            out,
            "  {host:width$}  {:>9} {:>9} {:>9} {:>9} {:>9}",
            c.added, c.removed, c.changed, c.unchanged, c.status_changes
        )?;
    }
    section(out, "added", o.added, |out, f| {
        writeln!(out, "  + {}  [{}]", f[0], f.get(2).unwrap_or(&"-"))
    })?;
    section(out, "removed", o.removed, |out, f| {
        writeln!(out, "  - {}  [{}]", f[0], f.get(2).unwrap_or(&"-"))
    })?;
    section(out, "changed", o.changed, |out, f| {
        let (a, b) = (f.get(1).unwrap_or(&""), f.get(2).unwrap_or(&""));
        writeln!(out, "  ~ {}  ({a} -> {b})", f[0])
    })?;
    section(out, "status changes", o.status, |out, f| {
        let (a, b) = (f.get(1).unwrap_or(&"-"), f.get(2).unwrap_or(&"-"));
        writeln!(out, "  ! {}  {a} -> {b}", f[0])
    })?;
    // Changes only, unless asked: the unchanged pages are usually most of a crawl.
    if all {
        section(out, "unchanged", o.unchanged, |out, f| {
            writeln!(out, "  = {}", f[0])
        })?;
    } else if o.unchanged.rows > 0 {
        writeln!(
            out,
            "\nunchanged: {} (not listed; --all lists them)",
            o.unchanged.rows
        )?;
    }
    Ok(())
}

/// A titled list in the text report (nothing when empty).
fn section(
    out: &mut dyn Write,
    title: &str,
    spool: Spool,
    mut row: impl FnMut(&mut dyn Write, &[&str]) -> io::Result<()>,
) -> io::Result<()> {
    if spool.rows == 0 {
        return Ok(());
    }
    writeln!(out, "\n{title} ({}):", spool.rows)?;
    spool.replay(|f| row(out, f))
}

fn counts_json(c: &Counts) -> String {
    format!(
        "{{\"added\": {}, \"removed\": {}, \"changed\": {}, \"unchanged\": {}, \"status_changes\": {}}}",
        c.added, c.removed, c.changed, c.unchanged, c.status_changes
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

pub(super) fn render_json(
    old: &Crawl,
    new: &Crawl,
    o: Outcome,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "{{")?;
    writeln!(out, "  \"old\": {},", json_str(&old.label))?;
    writeln!(out, "  \"new\": {},", json_str(&new.label))?;
    writeln!(out, "  \"summary\": {},", counts_json(&o.total))?;
    write!(out, "  \"hosts\": {{")?;
    for (i, (host, c)) in o.hosts.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(out, "{sep}\n    {}: {}", json_str(host), counts_json(c))?;
    }
    writeln!(out, "\n  }},")?;
    for (name, spool) in [
        ("added", o.added),
        ("removed", o.removed),
        ("changed", o.changed),
        ("unchanged", o.unchanged),
    ] {
        write!(out, "  {}: [", json_str(name))?;
        let mut first = true;
        spool.replay(|f| {
            let sep = if first { "" } else { "," };
            first = false;
            write!(out, "{sep}\n    {}", json_str(f[0]))
        })?;
        writeln!(out, "{}],", if first { "" } else { "\n  " })?;
    }
    write!(out, "  \"status_changes\": [")?;
    let mut first = true;
    o.status.replay(|f| {
        let sep = if first { "" } else { "," };
        first = false;
        write!(
            out,
            "{sep}\n    {{\"url\": {}, \"old\": {}, \"new\": {}}}",
            json_str(f[0]),
            json_str(f.get(1).unwrap_or(&"-")),
            json_str(f.get(2).unwrap_or(&"-"))
        )
    })?;
    writeln!(out, "{}]\n}}", if first { "" } else { "\n  " })?;
    Ok(())
}

/// Link to the capture of `url` at `ts` in pywb, or the URL as text without a replay base.
fn replay_link(pywb: Option<&str>, ts: &str, url: &str, label: &str) -> String {
    match pywb {
        Some(base) => format!(
            "<a href=\"{}/{}/{}\">{}</a>",
            html_escape(base.trim_end_matches('/')),
            html_escape(ts),
            html_escape(url),
            html_escape(label)
        ),
        None => html_escape(label),
    }
}

const HTML_STYLE: &str = "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child\
{text-align:left}li{font-family:monospace;margin:2px 0}.added{color:#060}.removed{color:#a00}\
.changed{color:#a60}del{background:#fdd;text-decoration:line-through}ins{background:#dfd;\
text-decoration:none}.words{font-family:serif;margin:.3em 0 1em 1em;max-width:60em}\
.cut{color:#888;font-style:italic}summary{cursor:pointer}";

/// Changed pages compared word by word in the HTML report; past this, listed only (each costs
/// reading two records from the WARCs).
const MAX_COMPARED: u64 = 500;

/// `20261130233813` → `2026-11-30 23:38:13`.
fn capture_date(ts: &str) -> String {
    if ts.len() < 14 || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return ts.to_string();
    }
    format!(
        "{}-{}-{} {}:{}:{}",
        &ts[..4],
        &ts[4..6],
        &ts[6..8],
        &ts[8..10],
        &ts[10..12],
        &ts[12..14]
    )
}

fn human_size(n: usize) -> String {
    indicatif::HumanBytes(n as u64).to_string()
}

/// A changed page with how it changed, for the HTML report.
struct ChangedPage {
    url: String,
    old_ts: String,
    new_ts: String,
    change: pages::PageChange,
}

/// Reads the changed rows and compares each page's two captures.
fn compare_changed(old: &Crawl, new: &Crawl, spool: Spool) -> io::Result<Vec<ChangedPage>> {
    let mut pages = Vec::new();
    let mut n = 0u64;
    spool.replay(|f| {
        n += 1;
        let field = |i: usize| f.get(i).copied().unwrap_or("-");
        let capture = |ts: &str, file: &str, offset: &str, revisit: &str| Capture {
            key: String::new(),
            timestamp: ts.to_string(),
            url: f[0].to_string(),
            status: None,
            digest: None,
            revisit: revisit == "r",
            filename: (file != "-").then(|| file.to_string()),
            offset: offset.parse().ok(),
            length: None,
        };
        let change = if n > MAX_COMPARED {
            pages::PageChange::NotCompared(format!(
                "only the first {MAX_COMPARED} changed pages are compared; use --url"
            ))
        } else {
            let a = capture(field(1), field(3), field(4), field(5));
            let b = capture(field(2), field(6), field(7), field(8));
            pages::compare((old, &a), (new, &b))
        };
        pages.push(ChangedPage {
            url: f[0].to_string(),
            old_ts: field(1).to_string(),
            new_ts: field(2).to_string(),
            change,
        });
        Ok(())
    })?;
    Ok(pages)
}

pub(super) fn render_html(
    old: &Crawl,
    new: &Crawl,
    o: Outcome,
    pywb: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = o.total;
    let changed = compare_changed(old, new, o.changed)?;
    let content: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::Content { .. }))
        .collect();
    let links_only: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::LinksOnly { .. }))
        .collect();
    let not_compared: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::NotCompared(_)))
        .collect();
    writeln!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>archiver diff</title>\
         <style>{HTML_STYLE}</style></head><body>"
    )?;
    writeln!(out, "<h1>What changed</h1>")?;
    writeln!(
        out,
        "<p>old: <code>{}</code><br>new: <code>{}</code></p>",
        html_escape(&old.label),
        html_escape(&new.label)
    )?;
    writeln!(
        out,
        "<p><b>{}</b> added, <b>{}</b> removed, <b>{}</b> changed ({} content, {} only links, \
         {} not compared), <b>{}</b> unchanged, <b>{}</b> status changes.</p>",
        t.added,
        t.removed,
        t.changed,
        content.len(),
        links_only.len(),
        not_compared.len(),
        t.unchanged,
        t.status_changes
    )?;
    writeln!(out, "<table><tr><th>host</th><th>added</th><th>removed</th><th>changed</th><th>unchanged</th><th>status changes</th></tr>")?;
    let mut rows: Vec<(String, Counts)> = o.hosts.iter().map(|(h, c)| (h.clone(), *c)).collect();
    rows.push(("all hosts".to_string(), t));
    for (host, c) in rows {
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&host),
            c.added,
            c.removed,
            c.changed,
            c.unchanged,
            c.status_changes
        )?;
    }
    writeln!(out, "</table>")?;
    // Both captures of a page: their dates, each linking to its own capture in replay.
    let both = |url: &str, a: &str, b: &str| {
        format!(
            "{} &rarr; {}",
            replay_link(pywb, a, url, &capture_date(a)),
            replay_link(pywb, b, url, &capture_date(b))
        )
    };
    writeln!(out, "<h2>Content changed ({})</h2>", content.len())?;
    for p in &content {
        if let pages::PageChange::Content { sizes, words } = &p.change {
            writeln!(
                out,
                "<details open><summary><code>{}</code> {} ({} &rarr; {})</summary>\
                 <div class=\"words\">{words}</div></details>",
                html_escape(&p.url),
                both(&p.url, &p.old_ts, &p.new_ts),
                human_size(sizes.0),
                human_size(sizes.1)
            )?;
        }
    }
    writeln!(out, "<h2>Only links changed ({})</h2>", links_only.len())?;
    if !links_only.is_empty() {
        writeln!(out, "<ul class=\"changed\">")?;
    }
    for p in &links_only {
        if let pages::PageChange::LinksOnly {
            sizes,
            added,
            removed,
        } = &p.change
        {
            let list = |sign: &str, v: &[String]| -> String {
                v.iter()
                    .map(|l| format!(" {sign}<code>{}</code>", html_escape(l)))
                    .collect()
            };
            let what = if added.is_empty() && removed.is_empty() {
                " (only the markup changed)".to_string()
            } else {
                format!(":{}{}", list("+", added), list("&minus;", removed))
            };
            writeln!(
                out,
                "<li>{} {} ({} &rarr; {}){what}</li>",
                html_escape(&p.url),
                both(&p.url, &p.old_ts, &p.new_ts),
                human_size(sizes.0),
                human_size(sizes.1)
            )?;
        }
    }
    if !links_only.is_empty() {
        writeln!(out, "</ul>")?;
    }
    if !not_compared.is_empty() {
        writeln!(
            out,
            "<h2>Changed, text not compared ({})</h2>\n<ul class=\"changed\">",
            not_compared.len()
        )?;
        for p in &not_compared {
            if let pages::PageChange::NotCompared(why) = &p.change {
                writeln!(
                    out,
                    "<li>{} {} ({})</li>",
                    html_escape(&p.url),
                    both(&p.url, &p.old_ts, &p.new_ts),
                    html_escape(why)
                )?;
            }
        }
        writeln!(out, "</ul>")?;
    }
    // An added or removed URL has one capture: its replay link, date and status.
    let one_capture = |f: &[&str]| {
        let ts = f.get(1).unwrap_or(&"");
        format!(
            "{} {} [{}]",
            html_escape(f[0]),
            replay_link(pywb, ts, f[0], &capture_date(ts)),
            html_escape(f.get(2).unwrap_or(&"-"))
        )
    };
    html_section(out, "Added", "added", o.added, one_capture)?;
    html_section(out, "Removed", "removed", o.removed, one_capture)?;
    html_section(out, "Status changes", "changed", o.status, |f| {
        let (a, b) = (f.get(1).unwrap_or(&"-"), f.get(2).unwrap_or(&"-"));
        let (ta, tb) = (f.get(3).unwrap_or(&""), f.get(4).unwrap_or(&""));
        format!(
            "{} {} &rarr; {}",
            html_escape(f[0]),
            replay_link(pywb, ta, f[0], a),
            replay_link(pywb, tb, f[0], b)
        )
    })?;
    // Unchanged pages are most of a crawl: collapsed, to be opened when wanted.
    writeln!(
        out,
        "<details><summary><b>Unchanged ({})</b></summary>",
        o.unchanged.rows
    )?;
    if o.unchanged.rows > 0 {
        writeln!(out, "<ul>")?;
        o.unchanged.replay(|f| {
            let ts = f.get(2).unwrap_or(&"");
            writeln!(out, "<li>{}</li>", replay_link(pywb, ts, f[0], f[0]))
        })?;
        writeln!(out, "</ul>")?;
    }
    writeln!(out, "</details>\n</body></html>")
}

fn html_section(
    out: &mut dyn Write,
    title: &str,
    class: &str,
    spool: Spool,
    item: impl Fn(&[&str]) -> String,
) -> io::Result<()> {
    writeln!(out, "<h2>{title} ({})</h2>", spool.rows)?;
    if spool.rows == 0 {
        return Ok(());
    }
    writeln!(out, "<ul class=\"{class}\">")?;
    spool.replay(|f| writeln!(out, "<li>{}</li>", item(f)))?;
    writeln!(out, "</ul>")
}
