//! Python's glob.glob(pattern) (non-recursive, hidden names left out unless
//! the pattern's component starts with '.'), which `_expand` uses: the glob
//! crate's rules differ (it never matches a hidden name by `.h*`, and it
//! refuses patterns Python takes literally, such as `a[b`).

use regex::Regex;
use std::fs;
use std::path::Path;

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn is_hidden(s: &str) -> bool {
    s.starts_with('.')
}

/// os.path.split
fn split(p: &str) -> (String, String) {
    let i = p.rfind('/').map_or(0, |i| i + 1);
    let (head, tail) = p.split_at(i);
    let trimmed = head.trim_end_matches('/');
    let head = if trimmed.is_empty() { head } else { trimmed };
    (head.to_string(), tail.to_string())
}

/// os.path.join(a, b)
fn join(a: &str, b: &str) -> String {
    if b.starts_with('/') {
        b.to_string()
    } else if a.is_empty() || a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

/// fnmatch.translate (the common cases exactly; a set the regex crate
/// refuses, such as a reversed range, matches nothing).
fn translate(pat: &str) -> Option<Regex> {
    let c: Vec<char> = pat.chars().collect();
    let n = c.len();
    let mut out = String::from(r"(?s)\A");
    let mut i = 0;
    while i < n {
        let ch = c[i];
        i += 1;
        match ch {
            '*' => {
                if !out.ends_with(".*") {
                    out.push_str(".*");
                }
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if j < n && c[j] == '!' {
                    j += 1;
                }
                if j < n && c[j] == ']' {
                    j += 1;
                }
                while j < n && c[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push_str(r"\[");
                    continue;
                }
                let stuff: String = c[i..j].iter().collect();
                i = j + 1;
                if stuff == "!" {
                    out.push('.');
                    continue;
                }
                let (neg, body) = match stuff.strip_prefix('!') {
                    Some(b) => (true, b.to_string()),
                    None => (false, stuff.clone()),
                };
                let mut cls = String::from(if neg { "[^" } else { "[" });
                for ch in body.chars() {
                    match ch {
                        '\\' | '[' | ']' | '&' | '~' | '|' | '^' => {
                            cls.push('\\');
                            cls.push(ch);
                        }
                        _ => cls.push(ch),
                    }
                }
                cls.push(']');
                out.push_str(&cls);
            }
            _ => out.push_str(&regex::escape(&ch.to_string())),
        }
    }
    out.push_str(r"\z");
    Regex::new(&out).ok()
}

fn list(dir: &str, dironly: bool) -> Vec<String> {
    let d = if dir.is_empty() { "." } else { dir };
    let Ok(rd) = fs::read_dir(d) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| !dironly || fs::metadata(e.path()).is_ok_and(|m| m.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn glob1(dir: &str, pattern: &str, dironly: bool) -> Vec<String> {
    let Some(re) = translate(pattern) else {
        return Vec::new();
    };
    list(dir, dironly)
        .into_iter()
        .filter(|x| is_hidden(pattern) || !is_hidden(x))
        .filter(|x| re.is_match(x))
        .collect()
}

fn glob0(dir: &str, base: &str) -> Vec<String> {
    let p = join(dir, base);
    let d = if dir.is_empty() { "." } else { dir };
    let ok = if base.is_empty() {
        Path::new(d).is_dir()
    } else {
        fs::symlink_metadata(&p).is_ok()
    };
    if ok {
        vec![base.to_string()]
    } else {
        Vec::new()
    }
}

fn iglob(pathname: &str, dironly: bool) -> Vec<String> {
    let (dirname, base) = split(pathname);
    if !has_magic(pathname) {
        let ok = if base.is_empty() {
            Path::new(&dirname).is_dir()
        } else {
            fs::symlink_metadata(pathname).is_ok()
        };
        return if ok {
            vec![pathname.to_string()]
        } else {
            Vec::new()
        };
    }
    if dirname.is_empty() {
        return glob1("", &base, dironly);
    }
    let dirs = if dirname != pathname && has_magic(&dirname) {
        iglob(&dirname, true)
    } else {
        vec![dirname]
    };
    let mut out = Vec::new();
    for d in dirs {
        let names = if has_magic(&base) {
            glob1(&d, &base, dironly)
        } else {
            glob0(&d, &base)
        };
        for n in names {
            out.push(join(&d, &n));
        }
    }
    out
}

/// glob.glob(pattern)
pub fn glob(pattern: &str) -> Vec<String> {
    iglob(pattern, false)
}
