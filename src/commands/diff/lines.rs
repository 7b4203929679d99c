//! Line diffs: Myers' shortest edit script between two lists of lines, and unified-diff hunks.

use std::fmt::Write as _;

/// Beyond this many differing lines the page diff stops looking for common lines in the
/// middle and shows it as replaced (keeps time and memory bounded on unrelated pages).
const MAX_EDITS: usize = 20_000;

/// One step of a line diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Shortest edit script between two lists of lines (Myers' O(ND) algorithm), after taking
/// off the common start and end. Past `MAX_EDITS` differences the middle is shown as
/// wholly replaced.
pub fn diff_lines<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops: Vec<Op<'a>> = a[..head].iter().map(|l| Op::Same(l)).collect();
    match myers(ma, mb, MAX_EDITS) {
        Some(middle) => ops.extend(middle),
        None => {
            ops.extend(ma.iter().map(|l| Op::Del(l)));
            ops.extend(mb.iter().map(|l| Op::Add(l)));
        }
    }
    ops.extend(a[a.len() - tail..].iter().map(|l| Op::Same(l)));
    ops
}

/// Myers' greedy forward search, keeping each round's furthest points (only the 2d+1
/// diagonals that round can reach) to walk back the path. `None` past `max_d` edits.
fn myers<'a>(a: &[&'a str], b: &[&'a str], max_d: usize) -> Option<Vec<Op<'a>>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (a.len() + b.len()).min(max_d) as isize;
    let off = max + 1;
    let mut v = vec![0isize; (2 * off + 1) as usize];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max {
        for k in (-d..=d).step_by(2) {
            let go_down =
                k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if go_down {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
                return Some(backtrack(a, b, &trace));
            }
        }
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
    }
    None
}

/// Walks the rounds of [`myers`] back from the end to the start.
fn backtrack<'a>(a: &[&'a str], b: &[&'a str], trace: &[Vec<isize>]) -> Vec<Op<'a>> {
    let mut ops = Vec::new();
    let (mut x, mut y) = (a.len() as isize, b.len() as isize);
    for d in (1..trace.len() as isize).rev() {
        let prev = &trace[(d - 1) as usize];
        let at = |k: isize| prev[(k + d - 1) as usize];
        let k = x - y;
        let go_down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if go_down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        let (mid_x, mid_y) = if go_down {
            (prev_x, prev_y + 1)
        } else {
            (prev_x + 1, prev_y)
        };
        while x > mid_x && y > mid_y {
            ops.push(Op::Same(a[(x - 1) as usize]));
            x -= 1;
            y -= 1;
        }
        if go_down {
            ops.push(Op::Add(b[(y - 1) as usize]));
        } else {
            ops.push(Op::Del(a[(x - 1) as usize]));
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Same(a[(x - 1) as usize]));
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}

/// Unified-diff hunks (`@@ -a,b +c,d @@`) with `context` lines around each change; empty
/// when nothing differs.
pub fn unified(ops: &[Op<'_>], context: usize) -> String {
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(context);
        let mut last = changed[i];
        while i + 1 < changed.len() && changed[i + 1] <= last + 2 * context + 1 {
            i += 1;
            last = changed[i];
        }
        let end = (last + context + 1).min(ops.len());
        let (mut a_line, mut b_line) = (1, 1);
        for op in &ops[..start] {
            match op {
                Op::Same(_) => {
                    a_line += 1;
                    b_line += 1;
                }
                Op::Del(_) => a_line += 1,
                Op::Add(_) => b_line += 1,
            }
        }
        let hunk = &ops[start..end];
        let a_len = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let b_len = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let _ = writeln!(out, "@@ -{a_line},{a_len} +{b_line},{b_len} @@");
        for op in hunk {
            let _ = match op {
                Op::Same(l) => writeln!(out, " {l}"),
                Op::Del(l) => writeln!(out, "-{l}"),
                Op::Add(l) => writeln!(out, "+{l}"),
            };
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(a: &[&str], ops: &[Op]) -> (Vec<String>, Vec<String>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        for op in ops {
            match op {
                Op::Same(l) => {
                    old.push(l.to_string());
                    new.push(l.to_string());
                }
                Op::Del(l) => old.push(l.to_string()),
                Op::Add(l) => new.push(l.to_string()),
            }
        }
        let _ = a;
        (old, new)
    }

    #[test]
    fn line_diff_is_minimal_and_reproduces_both_sides() {
        let a = ["a", "b", "c", "a", "b", "b", "a"];
        let b = ["c", "b", "a", "b", "a", "c"];
        let ops = diff_lines(&a, &b);
        let (old, new) = apply(&a, &ops);
        assert_eq!(old, a);
        assert_eq!(new, b);
        let edits = ops.iter().filter(|o| !matches!(o, Op::Same(_))).count();
        assert_eq!(edits, 5);
    }

    #[test]
    fn line_diff_handles_empty_and_equal_inputs() {
        assert!(diff_lines(&[], &[]).is_empty());
        assert_eq!(diff_lines(&["x"], &[]), vec![Op::Del("x")]);
        assert_eq!(diff_lines(&[], &["y"]), vec![Op::Add("y")]);
        assert_eq!(unified(&diff_lines(&["x", "y"], &["x", "y"]), 3), "");
    }

    #[test]
    fn unified_output_has_hunks_with_context() {
        let a: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        let mut b = a.clone();
        b[4] = "changed 5".into();
        b.insert(15, "new line".into());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        let text = unified(&diff_lines(&a, &b), 2);
        assert!(
            text.starts_with("@@ -3,5 +3,5 @@\n line 3\n line 4\n-line 5\n+changed 5\n"),
            "{text}"
        );
        assert!(
            text.contains("@@ -14,4 +14,5 @@\n line 14\n line 15\n+new line\n line 16\n"),
            "{text}"
        );
    }
}
