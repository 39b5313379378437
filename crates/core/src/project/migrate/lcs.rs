//! A line diff over digests: the longest common subsequence of two sequences of line hashes,
//! grouped into hunks (runs of lines only one side has).

/// One run of difference: `old` lines `old_start..old_start+old_len` (0-based) of the pristine
/// file replaced by `new` lines `new_start..new_start+new_len` of the project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
}

/// The runs that turn `old` into `new`.
pub fn runs(old: &[String], new: &[String]) -> Vec<Run> {
    // Common head and tail first: edits are usually few and the files long.
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old[head..old.len() - tail];
    let b = &new[head..new.len() - tail];
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: LCS length of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let mut out: Vec<Run> = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut push = |i: usize, j: usize, old: bool| {
        let (oi, nj) = (head + i, head + j);
        match out.last_mut() {
            Some(r) if r.old_start + r.old_len == oi && r.new_start + r.new_len == nj => {
                if old {
                    r.old_len += 1
                } else {
                    r.new_len += 1
                }
            }
            _ => out.push(Run {
                old_start: oi,
                old_len: usize::from(old),
                new_start: nj,
                new_len: usize::from(!old),
            }),
        }
    };
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[at(i, j + 1)] >= lcs[at(i + 1, j)]) {
            push(i, j, false);
            j += 1;
        } else {
            push(i, j, true);
            i += 1;
        }
    }
    out
}

/// How many lines differ in all: removed plus added.
pub fn distance(runs: &[Run]) -> usize {
    runs.iter().map(|r| r.old_len + r.new_len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.chars().map(|c| c.to_string()).collect()
    }

    #[test]
    fn runs_group_changes() {
        assert!(runs(&v("abc"), &v("abc")).is_empty());
        assert_eq!(
            runs(&v("abcdef"), &v("abXdef")),
            vec![Run {
                old_start: 2,
                old_len: 1,
                new_start: 2,
                new_len: 1
            }]
        );
        let r = runs(&v("abcdef"), &v("aYbcef"));
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].old_len, r[0].new_start, r[0].new_len), (0, 1, 1));
        assert_eq!((r[1].old_start, r[1].old_len, r[1].new_len), (3, 1, 0));
        assert_eq!(distance(&r), 2);
    }
}
